//! Reading a file as the scanner does: opened without following a link (unless asked), without
//! touching its access time where the kernel allows it, never blocking on a FIFO swapped in after
//! the walk; `fstat`ed before and after reading, never read more than one byte past its size (a
//! growing log or a pseudo-file cannot exhaust memory), and read again once if it changed meanwhile.

use crate::fingerprint::{fingerprint_until, FpParams, Source, Verdict};
use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::sync::atomic::{AtomicBool, Ordering};

/// What a file is as read: (device, inode, size, mtime_ns, ctime_ns).
pub type StatKey = (u64, u64, u64, i64, i64);

/// Files at least this large are streamed in chunks; smaller ones are read whole.
pub const LARGE_FILE: u64 = 4 << 20;

/// Why a file could not be fingerprinted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// A sentence for the user.
    Message(&'static str),
    /// An OS error while opening or reading (its errno: the caller words it).
    Os(i32),
}

/// A file read: its stat key and bytes (small files) or the verdict of streaming it (large ones),
/// or a large file whose first bytes may be a document's (read no further: see [`maybe_document`]).
pub enum Read2 {
    Small(StatKey, Vec<u8>),
    Large(StatKey, Verdict),
    MaybeDocument(StatKey),
}

/// Bytes of a file's start that [`maybe_document`] looks at.
pub const DOCUMENT_HEAD: usize = 4096;

/// Whether a file that starts with `head` may hold a document that `simscan.extract.sniff` reads
/// (decided there, in Python): a zip (OOXML, ODF, EPUB), `%PDF-` in its first 1,024 bytes, RTF, an
/// OLE compound file (an encrypted Office file), or markup first (HTML) after a byte-order mark and
/// white space.  Cheap and generous: most files start with none of these.
pub fn maybe_document(head: &[u8]) -> bool {
    const CFB: &[u8] = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1";
    if head.starts_with(b"PK\x03\x04") || head.starts_with(b"{\\rtf") || head.starts_with(CFB) {
        return true;
    }
    let first = &head[..head.len().min(1024)];
    if memchr::memchr(b'%', first).is_some() && memchr::memmem::find(first, b"%PDF-").is_some() {
        return true;
    }
    let (body, step, be) = if let Some(r) = head.strip_prefix(b"\xef\xbb\xbf") {
        (r, 1, false)
    } else if let Some(r) = head.strip_prefix(b"\xff\xfe") {
        (r, 2, false)
    } else if let Some(r) = head.strip_prefix(b"\xfe\xff") {
        (r, 2, true)
    } else {
        (head, 1, false)
    };
    let units = body.chunks_exact(step).map(|c| {
        if step == 1 {
            c[0] as u32
        } else if be {
            u16::from_be_bytes([c[0], c[1]]) as u32
        } else {
            u16::from_le_bytes([c[0], c[1]]) as u32
        }
    });
    for u in units {
        match u {
            0x20 | 0x09 | 0x0A | 0x0D => continue,
            0x3C => return true, // '<'
            _ => return false,
        }
    }
    false
}

impl Source for File {
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match FileExt::read_at(self, buf, offset) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => return r,
            }
        }
    }
}

/// Opens `path` read-only and non-blocking, with `O_NOATIME` where permitted (the file's owner,
/// or root; others get EPERM and open it plainly), not following a final link unless `follow`.
pub fn open_unseen(path: &[u8], follow: bool) -> io::Result<File> {
    let p = std::ffi::OsStr::from_bytes(path);
    let base = libc::O_NONBLOCK | if follow { 0 } else { libc::O_NOFOLLOW };
    match OpenOptions::new()
        .read(true)
        .custom_flags(base | libc::O_NOATIME)
        .open(p)
    {
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
            OpenOptions::new().read(true).custom_flags(base).open(p)
        }
        r => r,
    }
}

fn stat_key(m: &std::fs::Metadata) -> StatKey {
    (
        m.dev(),
        m.ino(),
        m.size(),
        m.mtime() * 1_000_000_000 + m.mtime_nsec(),
        m.ctime() * 1_000_000_000 + m.ctime_nsec(),
    )
}

/// The file's first `size + 1` bytes at most: its whole content when it still has `size` bytes.
/// One byte more shows that it grew; never reading further bounds memory (a pseudo-file under
/// /proc, with a stat size of 0, or a log that keeps growing could be read without end).
fn read_small(f: &mut impl Read, size: u64) -> io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(size as usize + 1);
    f.take(size + 1).read_to_end(&mut out)?;
    Ok(out)
}

enum Attempt {
    Ok(Read2),
    Changed,
}

fn attempt(path: &[u8], follow: bool, p: &FpParams, stop: &AtomicBool) -> Result<Attempt, Problem> {
    let mut f = open_unseen(path, follow).map_err(os_problem)?;
    let st = f.metadata().map_err(os_problem)?;
    if !st.file_type().is_file() {
        return Err(Problem::Message("no longer a regular file; skipped"));
    }
    let key = stat_key(&st);
    let size = st.size();
    if size >= LARGE_FILE {
        // A large document (a 40 MB PDF) goes back to Python to be sniffed and extracted, as a small
        // one does; only its head is read here.
        let mut head = vec![0u8; DOCUMENT_HEAD];
        let n = f.read_at(&mut head, 0).map_err(os_problem)?;
        if maybe_document(&head[..n]) {
            return Ok(Attempt::Ok(Read2::MaybeDocument(key)));
        }
        let verdict =
            fingerprint_until(&mut f, size, size + 1, p, None, false, stop).map_err(os_problem)?;
        let key2 = stat_key(&f.metadata().map_err(os_problem)?);
        let read = match &verdict {
            Verdict::Done(fp) => fp.size,
            _ => size,
        };
        if key2 != key || read != size {
            return Ok(Attempt::Changed);
        }
        Ok(Attempt::Ok(Read2::Large(key, verdict)))
    } else {
        let data = read_small(&mut f, size).map_err(os_problem)?;
        let key2 = stat_key(&f.metadata().map_err(os_problem)?);
        if key2 != key || data.len() as u64 != size {
            return Ok(Attempt::Changed);
        }
        Ok(Attempt::Ok(Read2::Small(key, data)))
    }
}

/// The problem of a file whose reading was stopped (the scan was cancelled; never stored).
pub const CANCELLED: &str = "cancelled";

fn os_problem(e: io::Error) -> Problem {
    if e.kind() == io::ErrorKind::Interrupted && e.raw_os_error().is_none() {
        return Problem::Message(CANCELLED);
    }
    match e.raw_os_error() {
        Some(libc::ENOENT) => Problem::Message("vanished before it could be read"),
        Some(libc::ELOOP) => {
            Problem::Message("became a symbolic link after the walk; not followed")
        }
        Some(code) => Problem::Os(code),
        None if e.kind() == io::ErrorKind::OutOfMemory => {
            Problem::Message("not enough memory to read it")
        }
        None => Problem::Os(libc::EIO),
    }
}

/// Reads one file for the scanner (tried twice if it changes while read); `stop` set: gives up
/// ("cancelled") before the file or at its next chunk.
pub fn read_file(
    path: &[u8],
    follow: bool,
    p: &FpParams,
    stop: &AtomicBool,
) -> Result<Read2, Problem> {
    for _ in 0..2 {
        if stop.load(Ordering::Relaxed) {
            return Err(Problem::Message(CANCELLED));
        }
        if let Attempt::Ok(r) = attempt(path, follow, p, stop)? {
            return Ok(r);
        }
    }
    Err(Problem::Message(
        "changed while being read (tried twice); skipped this time",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_may_start_so() {
        for head in [
            &b"PK\x03\x04rest"[..],
            b"%PDF-1.7",
            b"junk %PDF-1.4",
            b"{\\rtf1",
            b"\n  <!DOCTYPE html>",
            b"\xef\xbb\xbf<html>",
            b"\xff\xfe \x00<\x00",
        ] {
            assert!(maybe_document(head), "{head:?}");
        }
        for head in [
            &b"plain text"[..],
            b"",
            b"% a TeX comment",
            b"  x <b>",
            b"\x00\x01",
        ] {
            assert!(!maybe_document(head), "{head:?}");
        }
    }

    #[test]
    fn reading_stops_one_byte_past_the_size() {
        let (mut r, mut w) = io::pipe().unwrap();
        let feeder = std::thread::spawn(move || {
            use std::io::Write;
            let chunk = vec![b'x'; 1 << 16];
            for _ in 0..64 {
                if w.write_all(&chunk).is_err() {
                    break; // the reader stopped early, as it should
                }
            }
        });
        let got = read_small(&mut r, 100).unwrap();
        drop(r);
        feeder.join().unwrap();
        assert_eq!(got, vec![b'x'; 101]);
    }

    #[test]
    fn reads_small_files_and_reports_problems() {
        let dir = std::env::temp_dir().join(format!("simscan-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("a.txt");
        std::fs::write(&f, b"hello world").unwrap();
        let p = FpParams::default();
        match read_file(f.as_os_str().as_bytes(), false, &p, &AtomicBool::new(false)).unwrap() {
            Read2::Small(key, data) => {
                assert_eq!(data, b"hello world");
                assert_eq!(key.2, 11);
            }
            _ => panic!("small file streamed"),
        }
        let missing = dir.join("missing");
        assert_eq!(
            read_file(
                missing.as_os_str().as_bytes(),
                false,
                &p,
                &AtomicBool::new(false)
            )
            .err(),
            Some(Problem::Message("vanished before it could be read"))
        );
        let link = dir.join("link");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&f, &link).unwrap();
        assert_eq!(
            read_file(
                link.as_os_str().as_bytes(),
                false,
                &p,
                &AtomicBool::new(false)
            )
            .err(),
            Some(Problem::Message(
                "became a symbolic link after the walk; not followed"
            ))
        );
        assert!(read_file(
            link.as_os_str().as_bytes(),
            true,
            &p,
            &AtomicBool::new(false)
        )
        .is_ok());
        assert_eq!(
            read_file(
                dir.as_os_str().as_bytes(),
                false,
                &p,
                &AtomicBool::new(false)
            )
            .err(),
            Some(Problem::Message("no longer a regular file; skipped"))
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
