//! Opening a spool: the directory, the ack, a read through every segment, the cut of a torn
//! tail, and the writer thread.

use std::fs::{self, File};
use std::io::{self, Seek, SeekFrom};
use std::path::Path;
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, Notify};

use super::disk::Disk;
use super::reader::Reader;
use super::segment::{self, Position};
use super::writer::Writer;
use super::{Counts, Spool, SpoolConfig, SpoolState, APPEND_QUEUE};

/// Opens the spool of `config` on `disk`.
pub(super) fn open(config: SpoolConfig, disk: Box<dyn Disk>) -> io::Result<Spool> {
    create_private_dir(&config.dir)?;
    let dir = config.dir.clone();
    let mut ack_file = disk.open(&dir.join(segment::ACK_FILE))?;
    let mut ids = segment::segment_ids(&dir)?;
    let ack = segment::read_ack(&mut ack_file)?;
    let mut start = start_position(&*disk, &dir, &mut ids, ack)?;
    let mut counts = Counts::default();
    for &id in &ids {
        let from = if id == start.segment { start.offset } else { 0 };
        let valid_end = cut_and_count(&*disk, &dir, id, from, &mut counts)?;
        if id == start.segment {
            // An ack past a damaged segment's new end starts at that end.
            start.offset = start.offset.min(valid_end);
        }
    }
    let active = match ids.last() {
        Some(&id) => id,
        None => {
            disk.open(&segment::segment_path(&dir, start.segment))?;
            disk.sync_dir(&dir)?;
            start.segment
        }
    };
    let path = segment::segment_path(&dir, active);
    let mut file = disk.open(&path)?;
    let end = file.seek(SeekFrom::End(0))?;
    let at = Position {
        segment: active,
        offset: end,
    };
    if ack.is_none() {
        segment::write_ack(&*disk, &ack_file, &dir, start)?;
        disk.sync_dir(&dir)?;
    }
    if counts.depth > 0 {
        tracing::info!(
            dir = %dir.display(),
            records = counts.depth,
            bytes = counts.depth_bytes,
            "the spool holds records from before this start; they will be drained"
        );
    }
    let shared = Arc::new(SpoolState {
        config,
        durable: Mutex::new(at),
        counts: Mutex::new(counts),
        readable: Notify::new(),
        disk,
    });
    let writer = Writer {
        shared: shared.clone(),
        file,
        path,
        at,
        broken: false,
    };
    let reader = Reader {
        shared: shared.clone(),
        cursor: start,
        ack_file,
        file: None,
    };
    start_writer(shared, writer, reader)
}

/// Starts the writer's thread, and hands out the spool's first handle.
fn start_writer(shared: Arc<SpoolState>, writer: Writer, reader: Reader) -> io::Result<Spool> {
    let (appends, receiver) = mpsc::channel(APPEND_QUEUE);
    std::thread::Builder::new()
        .name("spool-writer".into())
        .spawn(move || writer.run(receiver))?;
    Ok(Spool {
        shared,
        appends,
        reader: Arc::new(Mutex::new(reader)),
    })
}

/// The directory, mode 0700 when this creates it: its files hold delivery bodies.
fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Where draining starts: the ack, when it names a segment that is there; else the oldest
/// segment's start. Segments before it were drained, and a crash came before their deletion.
fn start_position(
    disk: &dyn Disk,
    dir: &Path,
    ids: &mut Vec<u64>,
    ack: Option<Position>,
) -> io::Result<Position> {
    let first = ids.first().copied().unwrap_or(1);
    let start = match ack {
        Some(ack) if ids.contains(&ack.segment) => ack,
        Some(ack) if ids.is_empty() => Position {
            segment: ack.segment,
            offset: 0,
        },
        _ => Position {
            segment: first,
            offset: 0,
        },
    };
    let drained: Vec<u64> = ids
        .iter()
        .copied()
        .filter(|&id| id < start.segment)
        .collect();
    for &id in &drained {
        disk.remove(&segment::segment_path(dir, id))?;
    }
    if !drained.is_empty() {
        disk.sync_dir(dir)?;
        ids.retain(|id| !drained.contains(id));
    }
    Ok(start)
}

/// Reads segment `id` through, cuts off what follows its last whole record, and counts the
/// records at or after `from` as not yet drained. Returns where its whole records end.
fn cut_and_count(
    disk: &dyn Disk,
    dir: &Path,
    id: u64,
    from: u64,
    counts: &mut Counts,
) -> io::Result<u64> {
    let path = segment::segment_path(dir, id);
    let scan = segment::scan(&path, from)?;
    if scan.valid_end < scan.file_len {
        let cut = scan.file_len - scan.valid_end;
        let file = File::options().write(true).open(&path)?;
        file.set_len(scan.valid_end)?;
        disk.sync_all(&file, &path)?;
        counts.cut += 1;
        counts.cut_bytes += cut;
        tracing::warn!(
            segment = %path.display(),
            kept_bytes = scan.valid_end,
            cut_bytes = cut,
            "the spool's last record was torn or damaged and is cut off; \
             a record is acknowledged only once whole on disk"
        );
    }
    counts.depth += scan.records_from;
    counts.depth_bytes += scan.bytes_from;
    if counts.oldest_millis.is_none() {
        counts.oldest_millis = scan.first_millis_from;
    }
    Ok(scan.valid_end)
}
