//! The files of a spool: segments of records, and the ack file that says how far the
//! drainer got.
//!
//! A record is `len: u32 | crc: u32 | millis: u64 | payload[len]`, little-endian, where `crc`
//! is the CRC-32 of everything after it (the length too, through `len`'s bytes) and `millis`
//! the arrival time in milliseconds since the Unix epoch. A record is whole when its bytes
//! are all there and its checksum matches; a scan stops at the first that is not.

use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::disk::Disk;

/// Bytes before a record's payload.
pub(super) const HEADER_BYTES: u64 = 16;
/// The largest payload a record may have: a body of `--body-limit`'s ceiling
/// ([`MAX_BODY_LIMIT`](crate::MAX_BODY_LIMIT)) and its fields fit with room. A length past it
/// can only be a torn or damaged header, and is not believed.
pub const MAX_PAYLOAD_BYTES: u64 = 64 * 1024 * 1024;
/// The ack file: segment and offset of the next record to drain, and their CRC-32.
pub(super) const ACK_FILE: &str = "ack";
const ACK_BYTES: usize = 20;
const SEGMENT_SUFFIX: &str = ".seg";

/// A place in the spool: a segment and a byte offset in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Position {
    pub(super) segment: u64,
    pub(super) offset: u64,
}

/// One record read back.
pub(super) struct Record {
    pub(super) millis: u64,
    pub(super) payload: Vec<u8>,
    /// Where the next record starts.
    pub(super) end: u64,
}

/// Appends a record's bytes to `out`.
pub(super) fn encode(millis: u64, payload: &[u8], out: &mut Vec<u8>) {
    let len = u32::try_from(payload.len()).expect("payloads are bounded far below 4 GiB");
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&len.to_le_bytes());
    hasher.update(&millis.to_le_bytes());
    hasher.update(payload);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&hasher.finalize().to_le_bytes());
    out.extend_from_slice(&millis.to_le_bytes());
    out.extend_from_slice(payload);
}

/// The record at `offset` of `file`, or `None` when what is there is not a whole record
/// (end of file, a torn tail, a checksum that does not match).
pub(super) fn read_at(file: &mut File, offset: u64, file_len: u64) -> io::Result<Option<Record>> {
    if offset + HEADER_BYTES > file_len {
        return Ok(None);
    }
    file.seek(SeekFrom::Start(offset))?;
    let mut header = [0; HEADER_BYTES as usize];
    file.read_exact(&mut header)?;
    let len = u32::from_le_bytes(header[0..4].try_into().expect("4 bytes"));
    let crc = u32::from_le_bytes(header[4..8].try_into().expect("4 bytes"));
    let millis = u64::from_le_bytes(header[8..16].try_into().expect("8 bytes"));
    let end = offset + HEADER_BYTES + u64::from(len);
    if u64::from(len) > MAX_PAYLOAD_BYTES || end > file_len {
        return Ok(None);
    }
    let mut payload = vec![0; len as usize];
    file.read_exact(&mut payload)?;
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&header[0..4]);
    hasher.update(&header[8..16]);
    hasher.update(&payload);
    if hasher.finalize() != crc {
        return Ok(None);
    }
    Ok(Some(Record {
        millis,
        payload,
        end,
    }))
}

/// What a scan of one segment found: where its whole records end, and those from `from` on.
pub(super) struct Scan {
    pub(super) valid_end: u64,
    pub(super) file_len: u64,
    pub(super) records_from: u64,
    pub(super) bytes_from: u64,
    pub(super) first_millis_from: Option<u64>,
}

/// Reads every record of a segment, counting those at or after `from`.
pub(super) fn scan(path: &Path, from: u64) -> io::Result<Scan> {
    let mut file = File::open(path)?;
    let file_len = file.metadata()?.len();
    let mut scan = Scan {
        valid_end: 0,
        file_len,
        records_from: 0,
        bytes_from: 0,
        first_millis_from: None,
    };
    while let Some(record) = read_at(&mut file, scan.valid_end, file_len)? {
        if scan.valid_end >= from {
            scan.records_from += 1;
            scan.bytes_from += record.end - scan.valid_end;
            scan.first_millis_from.get_or_insert(record.millis);
        }
        scan.valid_end = record.end;
    }
    Ok(scan)
}

pub(super) fn segment_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("{id:020}{SEGMENT_SUFFIX}"))
}

/// The ids of the segments in `dir`, oldest first.
pub(super) fn segment_ids(dir: &Path) -> io::Result<Vec<u64>> {
    let mut ids = Vec::new();
    for entry in fs::read_dir(dir)? {
        let name = entry?.file_name();
        let id = name
            .to_str()
            .and_then(|n| n.strip_suffix(SEGMENT_SUFFIX))
            .and_then(|n| n.parse::<u64>().ok());
        ids.extend(id);
    }
    ids.sort_unstable();
    Ok(ids)
}

/// The position the ack file holds, or `None` when it is missing or damaged (a torn write
/// of it can only send the drainer back over records it drained, which the store's
/// idempotency answers as duplicates).
pub(super) fn read_ack(file: &mut File) -> io::Result<Option<Position>> {
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(0))?;
    file.read_to_end(&mut bytes)?;
    if bytes.len() < ACK_BYTES {
        return Ok(None);
    }
    let crc = u32::from_le_bytes(bytes[16..20].try_into().expect("4 bytes"));
    if crc32fast::hash(&bytes[..16]) != crc {
        return Ok(None);
    }
    Ok(Some(Position {
        segment: u64::from_le_bytes(bytes[0..8].try_into().expect("8 bytes")),
        offset: u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes")),
    }))
}

/// Overwrites the ack file of `dir` (open as `file`) with `at` and flushes it to disk. The
/// 20 bytes sit in one disk sector, and the checksum catches the rare device that tears even
/// that.
pub(super) fn write_ack(disk: &dyn Disk, file: &File, dir: &Path, at: Position) -> io::Result<()> {
    let mut bytes = [0; ACK_BYTES];
    bytes[0..8].copy_from_slice(&at.segment.to_le_bytes());
    bytes[8..16].copy_from_slice(&at.offset.to_le_bytes());
    let crc = crc32fast::hash(&bytes[..16]);
    bytes[16..20].copy_from_slice(&crc.to_le_bytes());
    #[cfg(unix)]
    std::os::unix::fs::FileExt::write_all_at(file, &bytes, 0)?;
    #[cfg(not(unix))]
    {
        use std::io::Write;
        let mut file = file;
        file.seek(SeekFrom::Start(0))?;
        file.write_all(&bytes)?;
    }
    disk.sync_data(file, &dir.join(ACK_FILE))
}
