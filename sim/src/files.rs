//! The one reader of the files a user names (run inputs, parameter files,
//! pictures, assembler and hex files, the files a `cu` input names): at
//! most a limit of bytes, whatever the file is. A regular file, a device
//! such as `/dev/zero`, a pipe or a terminal are all read through
//! `take(limit + 1)`: when more than `limit` bytes arrive the read stops
//! and is refused, so an endless input neither hangs nor grows memory past
//! the limit.

use std::io::Read;
use std::path::Path;

/// Why a file could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// Opening or reading failed.
    Io(std::io::Error),
    /// More than the limit arrived; `size` is the file's length when it is
    /// a regular file (a device or a pipe has none).
    TooLarge { size: Option<u64> },
}

impl ReadError {
    /// The reason, for a message that names the file and the limit:
    /// "cannot be read: ..." or "N bytes is larger than the limit of L bytes"
    /// ("more than L bytes arrived" for a file without a length).
    pub fn reason(&self, limit: u64) -> String {
        match self {
            ReadError::Io(e) => format!("cannot be read: {e}"),
            ReadError::TooLarge { size: Some(n) } => format!("{n} bytes is larger than the limit of {limit} bytes{}", mib(limit)),
            ReadError::TooLarge { size: None } => {
                format!("more than {limit} bytes arrived (it is not a regular file); the limit is {limit} bytes{}", mib(limit))
            }
        }
    }
}

/// " (N MiB)" for a whole number of MiB.
fn mib(limit: u64) -> String {
    if limit > 0 && limit.is_multiple_of(1 << 20) {
        format!(" ({} MiB)", limit >> 20)
    } else {
        String::new()
    }
}

/// Read `path` whole, refusing it when it holds more than `limit` bytes.
pub fn read_limited(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let file = std::fs::File::open(path).map_err(ReadError::Io)?;
    let size = file.metadata().ok().filter(|m| m.is_file()).map(|m| m.len());
    if let Some(n) = size.filter(|n| *n > limit) {
        return Err(ReadError::TooLarge { size: Some(n) });
    }
    let mut data = Vec::with_capacity(size.unwrap_or(0).min(limit) as usize);
    file.take(limit.saturating_add(1)).read_to_end(&mut data).map_err(ReadError::Io)?;
    if data.len() as u64 > limit {
        // A regular file that grew while it was read has a length again.
        let size = std::fs::metadata(path).ok().filter(|m| m.is_file()).map(|m| m.len());
        return Err(ReadError::TooLarge { size });
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_file_is_read_up_to_the_limit() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a");
        std::fs::write(&p, b"12345").unwrap();
        assert_eq!(read_limited(&p, 5).unwrap(), b"12345");
        let e = read_limited(&p, 4).unwrap_err();
        assert_eq!(e.reason(4), "5 bytes is larger than the limit of 4 bytes");
        #[cfg(unix)]
        {
            let e = read_limited(Path::new("/dev/zero"), 1 << 20).unwrap_err();
            assert_eq!(
                e.reason(1 << 20),
                "more than 1048576 bytes arrived (it is not a regular file); the limit is 1048576 bytes (1 MiB)"
            );
            assert_eq!(read_limited(Path::new("/dev/null"), 4).unwrap(), b"");
        }
        assert!(matches!(read_limited(&d.path().join("missing"), 4), Err(ReadError::Io(_))));
        assert!(matches!(read_limited(d.path(), 4), Err(ReadError::Io(_))));
    }
}
