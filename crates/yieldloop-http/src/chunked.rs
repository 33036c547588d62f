//! Chunked request bodies (RFC 9112 §7.1), decoded in place as they
//! arrive: the data of each chunk is moved down over the chunk lines before
//! it, so the buffer holds the head, the body decoded so far and at most
//! one line not yet complete.
//!
//! ```text
//!   chunked-body = *chunk last-chunk trailer-section CRLF
//!   chunk        = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
//!   last-chunk   = 1*"0" [ chunk-ext ] CRLF
//!
//!   Size ──n>0──▶ Data(n) ──n bytes──▶ DataEnd ──CRLF──▶ Size
//!     └───n=0───▶ Trailer ──field line──▶ Trailer ──CRLF──▶ Done
//! ```
//!
//! Limits: a chunk-size line (size and extensions) of at most
//! [`MAX_CHUNK_LINE`] bytes, sizes that fit in 64 bits, the decoded body
//! within `max_body` (413, told as soon as a chunk's size announces it),
//! trailers within `max_head` bytes (431). Extensions are checked for
//! control characters and ignored; trailer fields are checked as field
//! lines and dropped. Lines end with CRLF; a bare LF is refused (400), so
//! that no two readers of the same bytes can disagree on where a chunk ends.

/// The longest chunk-size line, extensions included: hyper allows 16 KiB
/// of extensions over a whole body, Go's net/http 4 KiB per line.
pub(crate) const MAX_CHUNK_LINE: usize = 4096;

/// Where a chunked body stands, kept between reads.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    /// What the decoder expects next.
    state: State,
    /// Body bytes decoded so far, for `max_body`.
    decoded: u64,
    /// Trailer bytes read so far, for the trailer limit.
    trailers: usize,
}

/// What the decoder expects next.
#[derive(Debug, Default, Clone, Copy)]
enum State {
    /// A chunk-size line.
    #[default]
    Size,
    /// This many more bytes of chunk data.
    Data(u64),
    /// The CRLF after chunk data.
    DataEnd,
    /// A trailer field line, or the empty line that ends the body.
    Trailer,
}

/// Offsets into the buffer, from the start of the request.
#[derive(Debug)]
pub(crate) struct Pos {
    /// Where the decoded body ends (it starts right after the head).
    pub(crate) body: usize,
    /// Where the bytes not yet decoded start.
    pub(crate) raw: usize,
    /// Where the bytes read end.
    pub(crate) end: usize,
}

/// What decoding found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// The body is not all in: read more. The bytes not yet decoded have
    /// been moved down to `body`.
    More,
    /// The body ends at `pos.body`; the next request starts at `pos.raw`.
    Done,
    /// Not acceptable: answer this status and close.
    Refuse(u16),
}

impl Decoder {
    /// Decodes what it can of `buf[pos.raw..pos.end]`.
    pub(crate) fn decode(
        &mut self,
        buf: &mut [u8],
        pos: &mut Pos,
        max_body: u64,
        max_trailers: usize,
    ) -> Step {
        loop {
            match self.state {
                State::Size => {
                    let (line, used) = match line(&buf[pos.raw..pos.end], MAX_CHUNK_LINE) {
                        Ok(Some(found)) => found,
                        Ok(None) => break,
                        Err(_) => return Step::Refuse(400),
                    };
                    let Some(size) = chunk_size(line) else {
                        return Step::Refuse(400);
                    };
                    pos.raw += used;
                    if size == 0 {
                        self.state = State::Trailer;
                    } else if self.decoded.saturating_add(size) > max_body {
                        return Step::Refuse(413);
                    } else {
                        self.state = State::Data(size);
                    }
                }
                State::Data(left) => {
                    let here = (pos.end - pos.raw) as u64;
                    let take = left.min(here) as usize;
                    if take == 0 {
                        break;
                    }
                    buf.copy_within(pos.raw..pos.raw + take, pos.body);
                    pos.body += take;
                    pos.raw += take;
                    self.decoded += take as u64;
                    let left = left - take as u64;
                    self.state = if left == 0 {
                        State::DataEnd
                    } else {
                        State::Data(left)
                    };
                }
                State::DataEnd => {
                    match buf
                        .get(pos.raw..pos.raw + 2)
                        .filter(|_| pos.raw + 2 <= pos.end)
                    {
                        None => break,
                        Some(b"\r\n") => pos.raw += 2,
                        Some(_) => return Step::Refuse(400),
                    }
                    self.state = State::Size;
                }
                State::Trailer => {
                    let room = max_trailers.saturating_sub(self.trailers);
                    let (line, used) = match line(&buf[pos.raw..pos.end], room) {
                        Ok(Some(found)) => found,
                        Ok(None) => break,
                        Err(_) => return Step::Refuse(431),
                    };
                    self.trailers += used;
                    pos.raw += used;
                    if line.is_empty() {
                        return Step::Done;
                    }
                    if !field_line(line) {
                        return Step::Refuse(400);
                    }
                }
            }
        }
        // Not all in: move what is left over the lines already decoded, so
        // that the buffer never holds more than the body and one line.
        buf.copy_within(pos.raw..pos.end, pos.body);
        pos.end -= pos.raw - pos.body;
        pos.raw = pos.body;
        Step::More
    }
}

/// The first line of `bytes` without its CRLF, and its length with it;
/// `Ok(None)` if it is not all in yet. `Err(400)` for a line ended by a
/// bare LF, `Err(431)` for one longer than `limit` bytes.
fn line(bytes: &[u8], limit: usize) -> Result<Option<(&[u8], usize)>, u16> {
    let seen = &bytes[..bytes.len().min(limit)];
    match seen.iter().position(|&b| b == b'\n') {
        Some(lf) if lf > 0 && bytes[lf - 1] == b'\r' => Ok(Some((&bytes[..lf - 1], lf + 1))),
        Some(_) => Err(400),
        None if bytes.len() >= limit => Err(431),
        None => Ok(None),
    }
}

/// A chunk-size line: hex digits, then nothing or `;` and extensions
/// (optionally after spaces, RFC 9112's BWS), without control characters.
fn chunk_size(line: &[u8]) -> Option<u64> {
    let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    if digits == 0 {
        return None;
    }
    let mut size: u64 = 0;
    for &d in &line[..digits] {
        let v = (d as char).to_digit(16)?;
        size = size.checked_mul(16)?.checked_add(u64::from(v))?;
    }
    let rest = &line[digits..];
    let ext = rest.trim_ascii_start();
    let ok = rest.is_empty()
        || (ext.first() == Some(&b';')
            && ext
                .iter()
                .all(|&b| b == b'\t' || (b' '..=b'~').contains(&b) || b >= 0x80));
    ok.then_some(size)
}

/// A trailer field line: a token, `:`, a value without control characters.
fn field_line(line: &[u8]) -> bool {
    let Some(colon) = line.iter().position(|&b| b == b':') else {
        return false;
    };
    let (name, value) = (&line[..colon], &line[colon + 1..]);
    !name.is_empty()
        && name.iter().all(|&b| tchar(b))
        && value
            .iter()
            .all(|&b| b == b'\t' || (b' '..=b'~').contains(&b) || b >= 0x80)
}

/// A token character (RFC 9110 §5.6.2).
fn tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes `raw` fed in pieces of `step` bytes: the body, and where the
    /// rest starts; or the refusal.
    fn decode(raw: &[u8], step: usize) -> Result<(Vec<u8>, Vec<u8>), u16> {
        let mut buf = vec![0u8; raw.len()];
        let mut dec = Decoder::default();
        let mut pos = Pos {
            body: 0,
            raw: 0,
            end: 0,
        };
        let mut fed = 0;
        loop {
            let n = step.min(raw.len() - fed);
            buf[pos.end..pos.end + n].copy_from_slice(&raw[fed..fed + n]);
            pos.end += n;
            fed += n;
            match dec.decode(&mut buf, &mut pos, 100, 64) {
                Step::Done => {
                    let mut rest = buf[pos.raw..pos.end].to_vec();
                    rest.extend_from_slice(&raw[fed..]);
                    return Ok((buf[..pos.body].to_vec(), rest));
                }
                Step::Refuse(s) => return Err(s),
                Step::More if fed == raw.len() => return Err(0),
                Step::More => {}
            }
        }
    }

    /// Whole and byte by byte, the same body and the same rest.
    #[test]
    fn bodies_in_any_pieces() {
        let raw = b"5;a=b\r\nhello\r\n1 ;x\r\n \r\nA\r\n0123456789\r\n0\r\nX-T: v\r\n\r\nNEXT";
        for step in [1, 2, 7, raw.len()] {
            let (body, rest) = decode(raw, step).unwrap();
            assert_eq!(body, b"hello 0123456789");
            assert_eq!(rest, b"NEXT");
        }
    }

    /// What is refused, and with which status.
    #[test]
    fn refusals() {
        assert_eq!(decode(b"5\nhello\r\n0\r\n\r\n", 1), Err(400)); // bare LF
        assert_eq!(decode(b"x\r\n", 100), Err(400)); // no size
        assert_eq!(decode(b"-5\r\n", 100), Err(400));
        assert_eq!(decode(b"5 \r\nhello\r\n0\r\n\r\n", 100), Err(400));
        assert_eq!(decode(b"11111111111111111\r\n", 100), Err(400)); // 2^64 and more
        assert_eq!(decode(b"65\r\n", 100), Err(413)); // 101 > 100
        assert_eq!(decode(b"2\r\nabX\r\n", 100), Err(400)); // no CRLF after data
        assert_eq!(decode(b"0\r\nno colon\r\n\r\n", 100), Err(400));
        assert_eq!(decode(b"1;\x00\r\na\r\n", 100), Err(400));
        let long = [b"0\r\nX: ".as_slice(), &[b'v'; 80], b"\r\n\r\n"].concat();
        assert_eq!(decode(&long, 5), Err(431));
    }
}
