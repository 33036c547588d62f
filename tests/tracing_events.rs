//! Feature `tracing`: what a subscriber is told. A recording subscriber
//! (written here, so that no subscriber crate is needed) sees a `task` span
//! per task with its id and name, `resume`/`pause`/`end` events inside it
//! with the op, events of the task's own code inside its span, the
//! slow-task warning as a `WARN` event naming the task, and a task's panic
//! as an `ERROR` event naming it.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// One span as created: its name and fields.
#[derive(Debug, Clone)]
struct SpanRec {
    name: String,
    fields: BTreeMap<String, String>,
}

/// One event: level, fields (`message` included) and the name and fields
/// of the innermost span entered on its thread when it was emitted.
#[derive(Debug, Clone)]
struct EventRec {
    level: Level,
    fields: BTreeMap<String, String>,
    span: Option<SpanRec>,
}

#[derive(Default)]
struct Seen {
    spans: BTreeMap<u64, SpanRec>,
    events: Vec<EventRec>,
    /// The entered spans, innermost last (one thread records here).
    stack: Vec<u64>,
}

#[derive(Clone, Default)]
struct Recorder {
    seen: Arc<Mutex<Seen>>,
    next: Arc<AtomicU64>,
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().to_string(), format!("{value:?}"));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        let rec = SpanRec {
            name: attrs.metadata().name().to_string(),
            fields,
        };
        self.seen.lock().unwrap().spans.insert(id, rec);
        Id::from_u64(id)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        let mut seen = self.seen.lock().unwrap();
        let span = seen.stack.last().and_then(|id| seen.spans.get(id)).cloned();
        seen.events.push(EventRec {
            level: *event.metadata().level(),
            fields,
            span,
        });
    }

    fn enter(&self, id: &Id) {
        self.seen.lock().unwrap().stack.push(id.into_u64());
    }

    fn exit(&self, id: &Id) {
        let mut seen = self.seen.lock().unwrap();
        if let Some(at) = seen.stack.iter().rposition(|s| *s == id.into_u64()) {
            seen.stack.remove(at);
        }
    }
}

fn field<'a>(e: &'a EventRec, name: &str) -> Option<&'a str> {
    e.fields.get(name).map(String::as_str)
}

#[test]
fn tasks_are_spans_and_their_pauses_events() {
    let rec = Recorder::default();
    let seen = rec.seen.clone();
    tracing::subscriber::with_default(rec, || {
        yieldloop::run(|| {
            let worker = yieldloop::Builder::new()
                .name("worker")
                .spawn(|| {
                    tracing::info!("inside the worker");
                    yieldloop::sleep(Duration::from_millis(2));
                    6 * 7
                })
                .unwrap();
            assert_eq!(worker.join().unwrap(), 42);
        });
    });
    let seen = seen.lock().unwrap();
    let worker_span = seen
        .spans
        .values()
        .find(|s| {
            s.name == "task" && s.fields.get("task_name").map(String::as_str) == Some("worker")
        })
        .expect("a span for the named task");
    assert!(worker_span.fields.contains_key("task_id"));
    let in_worker: Vec<&EventRec> = seen
        .events
        .iter()
        .filter(|e| {
            e.span
                .as_ref()
                .is_some_and(|s| s.fields.get("task_name") == worker_span.fields.get("task_name"))
        })
        .collect();
    let messages: Vec<&str> = in_worker
        .iter()
        .filter_map(|e| field(e, "message"))
        .collect();
    assert!(messages.contains(&"inside the worker"), "{messages:?}");
    let pauses: Vec<&str> = in_worker
        .iter()
        .filter(|e| field(e, "message") == Some("pause"))
        .filter_map(|e| field(e, "op"))
        .collect();
    assert!(
        pauses.iter().any(|op| op.starts_with("Wait")),
        "the sleep's pause carries its op: {pauses:?}"
    );
    assert!(messages.contains(&"resume"), "{messages:?}");
    assert!(messages.contains(&"end"), "{messages:?}");
    assert!(in_worker
        .iter()
        .filter(|e| field(e, "message") != Some("inside the worker"))
        .all(|e| e.level == Level::TRACE));
}

#[test]
fn slow_tasks_and_panics_are_events_naming_the_task() {
    let rec = Recorder::default();
    let seen = rec.seen.clone();
    yieldloop::diag::set_slow_task_threshold(Some(Duration::from_millis(20)));
    tracing::subscriber::with_default(rec, || {
        yieldloop::run(|| {
            let hog = yieldloop::Builder::new()
                .name("hog")
                .spawn(|| std::thread::sleep(Duration::from_millis(120)))
                .unwrap();
            hog.join().unwrap();
            let bad = yieldloop::Builder::new()
                .name("bad")
                .spawn(|| -> u32 { panic!("boom in a task") })
                .unwrap();
            assert!(bad.join().unwrap_err().is_panic());
        });
    });
    let seen = seen.lock().unwrap();
    let warn = seen
        .events
        .iter()
        .find(|e| e.level == Level::WARN)
        .expect("the slow-task warning as an event");
    assert_eq!(field(warn, "task_name"), Some("hog"));
    let held: f64 = field(warn, "held_ms").unwrap().parse().unwrap();
    assert!(held >= 20.0, "held {held} ms");
    let error = seen
        .events
        .iter()
        .find(|e| e.level == Level::ERROR)
        .expect("the panic as an event");
    assert_eq!(field(error, "task_name"), Some("bad"));
    assert_eq!(field(error, "message"), Some("a task panicked"));
    assert_eq!(field(error, "panic"), Some("boom in a task"));
    assert!(field(error, "location").is_some_and(|l| l.contains("tracing_events.rs")));
}
