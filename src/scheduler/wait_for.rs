//! Filing a paused task under what its [`Op`] waits for: a timer, a
//! socket, another task's end, or a park token.

use std::io;
use std::time::Instant;

use super::table::{Task, TaskState, WaitKind};
use super::timers::TimerKind;
use super::Core;
use crate::protocol::{Op, Resume, SchedulerId, TaskId, WaitToken};
use crate::reactor::{IoWait, WaitingTasks};

impl Core {
    /// Files the task `id`, which just paused with `op`, under what `op`
    /// waits for. `Op::Yield` never comes here: the loop puts a yielding
    /// task straight back in the run queue. An op that cannot be waited
    /// for (a stale socket id, a foreign park token) ends the wait at once
    /// with an error.
    #[inline(always)]
    pub(super) fn wait_for(&mut self, id: TaskId, op: Op, sched: SchedulerId) {
        // The commonest wait after a yield, a park on the task's own token
        // (every channel and primitive waits so), is filed here, inlined
        // into the loop; the rest in a call.
        if let Op::Park(t, deadline) = &op {
            if t.wait.key == id.key && t.sched == sched {
                // What the parking code said it parks on, for a dump.
                let on = WaitKind::Parked(super::port::take_parked_on());
                // The token was handed out before the pause; it is the wait.
                self.set_waiting(t.wait, false, on);
                if let Some(deadline) = *deadline {
                    self.arm_deadline(t.wait, deadline);
                }
                return;
            }
        }
        self.wait_for_other(id, op);
    }

    /// [`wait_for`](Self::wait_for) for every op other than a park on the
    /// task's own token.
    #[inline(never)]
    fn wait_for_other(&mut self, id: TaskId, op: Op) {
        let token = self.tasks.fresh_token();
        let wait = WaitToken { key: id.key, token };
        let (what, io, deadline) = match op {
            Op::Yield | Op::Defer => unreachable!("the loop queues a yield without filing it"),
            Op::Wait(deadline) => {
                self.set_waiting(wait, true, WaitKind::Timer);
                self.timers.insert(deadline, wait, TimerKind::Sleep);
                return;
            }
            Op::Join(target, deadline) => {
                self.set_waiting(wait, false, WaitKind::Join);
                let filed = match self.tasks.get_mut(target) {
                    Some(Task {
                        header: Some(h), ..
                    }) if target != id => {
                        // A join that times out leaves its token behind in
                        // the list; the target's end then finds the task no
                        // longer in that wait and wakes nothing.
                        h.joiners().push(wait);
                        true
                    }
                    _ => false,
                };
                if !filed {
                    // Ended already (or joining itself, which could never
                    // end): answer at once.
                    self.waking().wake(wait, Resume::Ready, "now");
                } else if let Some(deadline) = deadline {
                    self.arm_deadline(wait, deadline);
                }
                return;
            }
            Op::Park(..) => {
                // A token of another task (the task's own was filed in
                // `wait_for`): the wait ends at once, with an error.
                let on = WaitKind::Parked(super::port::take_parked_on());
                self.set_waiting(wait, false, on);
                let e = io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "yieldloop: Op::Park with a token of another task",
                );
                self.waking().wake(wait, Resume::Err(e), "now");
                return;
            }
            Op::ReadReady(io, d) => (IoWait::Readable, io, d),
            Op::WriteReady(io, d) => (IoWait::Writable, io, d),
            Op::Accept(io, d) => (IoWait::Connection, io, d),
        };
        self.set_waiting(wait, false, WaitKind::Io(what));
        let tasks = &self.tasks;
        match self
            .reactor
            .add_waiter(io, what, wait, |w| tasks.is_waiting(w))
        {
            Ok(()) => {
                if let Some(deadline) = deadline {
                    self.arm_deadline(wait, deadline);
                }
            }
            Err(e) => self.waking().wake(wait, Resume::Err(e), "now"),
        }
    }

    /// Puts the task of `wait` in that wait, on `on`, as of now.
    #[inline]
    fn set_waiting(&mut self, wait: WaitToken, timer: bool, on: WaitKind) {
        self.tasks.slab[wait.key].state = TaskState::Waiting {
            token: wait.token,
            timer,
            on,
            since: self.tasks.clock,
        };
    }

    /// Bounds the wait `wait`, already filed, by `deadline`.
    fn arm_deadline(&mut self, wait: WaitToken, deadline: Instant) {
        if let TaskState::Waiting { timer, .. } = &mut self.tasks.slab[wait.key].state {
            *timer = true;
        }
        self.timers.insert(deadline, wait, TimerKind::Deadline);
    }
}
