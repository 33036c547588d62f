//! The request head: what `httparse` checks (the grammar of the request
//! line and the header lines), and what it leaves to the server (RFC 9112):
//! the version, the target's form, `Host`, and the framing of the body.
//!
//! ```text
//!   bytes ──httparse──┬─ Partial ───────────────▶ read more (414/431 past max_head)
//!                     ├─ bad version ─┬─ HTTP/1.x, x ≥ 2 ▶ Patch: served as 1.1
//!                     │               └─ another major ──▶ 505
//!                     ├─ other error ─────────────▶ 400 (431 for too many headers)
//!                     └─ Complete ─▶ Host once and valid, one framing ─▶ Head
//! ```

use std::mem::MaybeUninit;

use super::config::ServeConfig;
use super::message::Request;

/// What parsing the bytes at the start of the buffer found.
pub(crate) enum Parsed<'b> {
    /// Not all of the head is in yet.
    Partial,
    /// Not acceptable: answer this status and close.
    Refuse(u16),
    /// An `HTTP/1.x` request with `x` of 2 or more: the minor digit at this
    /// offset is to be made a `1` and the head parsed again, so that the
    /// request is served as HTTP/1.1 (RFC 9110 §6.2: a server answers with
    /// the highest minor version it supports).
    Patch(usize),
    /// A head the server takes.
    Complete(Head<'b>),
}

/// How the body of a request is delimited (RFC 9112 §6.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Framing {
    /// `Content-Length` bytes (0 without the header).
    Length(u64),
    /// `Transfer-Encoding: chunked`, decoded by `chunked`.
    Chunked,
}

/// A complete head and what frames its request.
pub(crate) struct Head<'b> {
    /// The request, its body still empty.
    pub(crate) req: Request<'b>,
    /// The length of the head in bytes.
    pub(crate) len: usize,
    /// How its body is delimited.
    pub(crate) framing: Framing,
    /// Whether the connection may stay open after the answer.
    pub(crate) keep_alive: bool,
    /// The client waits for `100 Continue` before it sends the body.
    pub(crate) expect_continue: bool,
}

/// The status for a head that passed `max_head` bytes (`buf` holds at
/// least that many): 414 if the request line alone is longer, else 431.
pub(crate) fn too_long(buf: &[u8], max_head: usize) -> u16 {
    let line_ends = buf[..max_head.min(buf.len())].contains(&b'\n');
    if line_ends {
        431
    } else {
        414
    }
}

/// Parses the request head at the start of `buf` into `table`.
pub(crate) fn parse<'b>(
    buf: &'b [u8],
    table: &'b mut [MaybeUninit<httparse::Header<'b>>],
    config: &ServeConfig,
) -> Parsed<'b> {
    let mut req = httparse::Request::new(&mut []);
    let len = match req.parse_with_uninit_headers(buf, table) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Parsed::Partial,
        Err(httparse::Error::TooManyHeaders) => return Parsed::Refuse(431),
        Err(httparse::Error::Version) => return version(buf),
        Err(_) => return Parsed::Refuse(400),
    };
    if len > config.max_head {
        return Parsed::Refuse(too_long(buf, config.max_head));
    }
    // A complete parse fills these in.
    let (Some(method), Some(target), Some(version)) = (req.method, req.path, req.version) else {
        return Parsed::Refuse(400);
    };
    let headers: &'b [httparse::Header<'b>] = req.headers;
    let mut body_len: Option<u64> = None;
    let mut host: Option<&'b [u8]> = None;
    // Transfer codings, all `Transfer-Encoding` lines together: how many,
    // and whether the last one is `chunked`.
    let (mut codings, mut last_chunked, mut chunked_before_last) = (0usize, false, false);
    let (mut close, mut keep, mut expect) = (false, false, false);
    for h in headers {
        let name = h.name;
        if name.eq_ignore_ascii_case("content-length") {
            let Some(n) = content_length(h.value) else {
                return Parsed::Refuse(400);
            };
            // Two different lengths: which one frames the body is anyone's
            // guess, so refuse.
            if body_len.is_some_and(|m| m != n) {
                return Parsed::Refuse(400);
            }
            body_len = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            for coding in h.value.split(|&b| b == b',') {
                let coding = coding.trim_ascii();
                if coding.is_empty() {
                    continue;
                }
                chunked_before_last |= last_chunked;
                codings += 1;
                last_chunked = coding.eq_ignore_ascii_case(b"chunked");
            }
            if codings == 0 {
                return Parsed::Refuse(400);
            }
        } else if name.eq_ignore_ascii_case("host") {
            // RFC 9112 §3.2: more than one Host line, or an invalid value,
            // MUST get 400.
            // Kept as bytes: a valid value is ASCII, turned into a str
            // only when the handler asks (`Request::host`).
            let value = valid_host(h.value).then_some(h.value);
            let (None, Some(value)) = (host, value) else {
                return Parsed::Refuse(400);
            };
            host = Some(value);
        } else if name.eq_ignore_ascii_case("connection") {
            for token in h.value.split(|&b| b == b',') {
                let token = token.trim_ascii();
                close |= token.eq_ignore_ascii_case(b"close");
                keep |= token.eq_ignore_ascii_case(b"keep-alive");
            }
        } else if name.eq_ignore_ascii_case("expect") {
            expect = h.value.trim_ascii().eq_ignore_ascii_case(b"100-continue");
        }
    }
    // HTTP/1.1 requires Host; both framings at once is how requests are
    // smuggled past proxies, and so is a coding in an HTTP/1.0 request
    // (RFC 9112 §6.1: its framing is to be treated as faulty).
    let transfer = codings > 0;
    if (version == 1 && host.is_none()) || (transfer && (body_len.is_some() || version == 0)) {
        return Parsed::Refuse(400);
    }
    let framing = if transfer {
        // `chunked` twice, or not last: the body's end cannot be told
        // (RFC 9112 §6.3: 400). Chunked over another coding: a coding the
        // server does not undo (501, as Go's net/http answers).
        if !last_chunked || chunked_before_last {
            return Parsed::Refuse(400);
        }
        if codings > 1 {
            return Parsed::Refuse(501);
        }
        Framing::Chunked
    } else {
        Framing::Length(body_len.unwrap_or(0))
    };
    let Some((authority, path, query)) = split_target(target) else {
        return Parsed::Refuse(400);
    };
    // RFC 9112 §3.2.2: the authority of an absolute-form target replaces
    // the Host header.
    let host = match authority {
        Some(a) => a.as_bytes(),
        None => host.unwrap_or(b""),
    };
    Parsed::Complete(Head {
        req: Request {
            method,
            path,
            query,
            host,
            version,
            headers,
            body: &[],
            peer: None,
        },
        len,
        framing,
        keep_alive: !close && (version == 1 || keep),
        expect_continue: expect && version == 1,
    })
}

/// The answer to a version `httparse` does not take: where to patch an
/// `HTTP/1.x` with `x` ≥ 2, 505 for another major version, 400 for what
/// is no version at all.
fn version(buf: &[u8]) -> Parsed<'static> {
    // method SP target SP version: httparse took the first two, so the
    // version starts after the second space.
    let Some(at) = buf
        .iter()
        .enumerate()
        .filter(|&(_, &b)| b == b' ')
        .nth(1)
        .map(|(i, _)| i + 1)
    else {
        return Parsed::Refuse(400);
    };
    match buf.get(at..at + 8) {
        Some([b'H', b'T', b'T', b'P', b'/', major, b'.', minor])
            if major.is_ascii_digit() && minor.is_ascii_digit() =>
        {
            if *major == b'1' {
                Parsed::Patch(at + 7)
            } else {
                Parsed::Refuse(505)
            }
        }
        _ => Parsed::Refuse(400),
    }
}

/// Splits a request target into (authority, path, query). The
/// origin form (`/p?q`) has no authority; the absolute form
/// (`http://host:port/p?q`, RFC 9112 §3.2.2) gives its authority and a
/// path of `/` when it has none; the asterisk form (`*`) and the authority
/// form of `CONNECT` are passed on as the path. `None`: an absolute form
/// with an invalid authority.
fn split_target(target: &str) -> Option<(Option<&str>, &str, &str)> {
    let (rest, authority) = match absolute(target) {
        None => (target, None),
        Some(after) => {
            let end = after.find(['/', '?']).unwrap_or(after.len());
            let authority = &after[..end];
            if !valid_host(authority.as_bytes()) || authority.is_empty() {
                return None;
            }
            (&after[end..], Some(authority))
        }
    };
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    let path = if authority.is_some() && path.is_empty() {
        "/"
    } else {
        path
    };
    Some((authority, path, query))
}

/// What follows `scheme://` if `target` is in absolute form.
fn absolute(target: &str) -> Option<&str> {
    if target.starts_with('/') {
        return None;
    }
    let (scheme, after) = target.split_once("://")?;
    let mut chars = scheme.bytes();
    let first = chars.next()?;
    let scheme_ok = first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.'));
    scheme_ok.then_some(after)
}

/// A `Host` value per RFC 9110 §7.2 and RFC 3986 §3.2.2: `uri-host [ ":"
/// port ]`, the host a reg-name (unreserved, percent-encoded and sub-delims
/// characters), an IPv4 address (a reg-name's characters) or an IP literal
/// in brackets; empty is allowed (a target without an authority). Every
/// byte it accepts is ASCII, so a valid value is also valid UTF-8.
fn valid_host(value: &[u8]) -> bool {
    let (host, port): (&[u8], Option<&[u8]>) = if let Some(literal) = value.strip_prefix(b"[") {
        let Some(close) = literal.iter().position(|&b| b == b']') else {
            return false;
        };
        let (inside, after) = (&literal[..close], &literal[close + 1..]);
        if inside.is_empty() || !inside.iter().all(|&b| byte_is(LITERAL, b)) {
            return false;
        }
        match after {
            [] => (b"", None),
            [b':', port @ ..] => (b"", Some(port)),
            _ => return false,
        }
    } else {
        match value.iter().rposition(|&b| b == b':') {
            Some(colon) => (&value[..colon], Some(&value[colon + 1..])),
            None => (value, None),
        }
    };
    host.iter().all(|&b| byte_is(REG_NAME, b))
        && port.is_none_or(|p| p.iter().all(u8::is_ascii_digit))
}

/// The bytes of a reg-name: unreserved, `%` of a percent-encoding,
/// sub-delims.
const REG_NAME: u8 = 1;
/// The bytes of an IP literal's inside: a reg-name's, and `:`.
const LITERAL: u8 = 2;

/// For each byte, the classes ([`REG_NAME`], [`LITERAL`]) it belongs to:
/// one load per byte of a `Host` value.
static HOST_BYTES: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        let reg_name = c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'-' | b'.'
                    | b'_'
                    | b'~'
                    | b'%'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
            );
        if reg_name {
            table[b] |= REG_NAME | LITERAL;
        }
        if c == b':' {
            table[b] |= LITERAL;
        }
        b += 1;
    }
    table
};

#[inline]
fn byte_is(class: u8, b: u8) -> bool {
    HOST_BYTES[b as usize] & class != 0
}

/// A `Content-Length` value: digits only, without sign or spaces around.
fn content_length(value: &[u8]) -> Option<u64> {
    let value = value.trim_ascii();
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(value).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Host values: what RFC 3986 allows, and what it does not.
    #[test]
    fn host_values() {
        for ok in [
            "",
            "example.com",
            "example.com:8080",
            "127.0.0.1:80",
            "[::1]",
            "[::1]:443",
            "a-b_c~d%20",
        ] {
            assert!(valid_host(ok.as_bytes()), "{ok:?}");
        }
        for bad in [
            "a b",
            "a/b",
            "user@host",
            "host:80x",
            "[::1",
            "[::1]x",
            "a?b",
            "a#b",
            "h\t",
        ] {
            assert!(!valid_host(bad.as_bytes()), "{bad:?}");
        }
    }

    /// Targets in origin, absolute and asterisk form.
    #[test]
    fn targets() {
        assert_eq!(split_target("/a?b"), Some((None, "/a", "b")));
        assert_eq!(
            split_target("http://x:1/a/b?c=d"),
            Some((Some("x:1"), "/a/b", "c=d"))
        );
        assert_eq!(split_target("HTTPS://x"), Some((Some("x"), "/", "")));
        assert_eq!(split_target("http://x?q"), Some((Some("x"), "/", "q")));
        assert_eq!(split_target("*"), Some((None, "*", "")));
        assert_eq!(split_target("http://u@x/"), None);
        assert_eq!(split_target("http:///"), None);
    }
}
