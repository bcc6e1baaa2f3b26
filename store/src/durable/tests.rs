//! The durable engine's write-ahead log, end to end: when replies are sent relative to
//! `fsync` (through a log file that records and can hold its calls), what replay restores
//! from a log past the last checkpoint (a torn last record, a checksum mismatch at the end
//! and in the middle, an empty log), and the refusal of writes while the log cannot be
//! written.

use super::format::log::{HEADER_LEN, REACH_AT};
use super::wal::{DiskLog, LogFile};
use super::*;
use crate::op::WriteOp;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Condvar, mpsc};
use std::task::Poll;
use std::time::Instant;
use tableq_model::Value;

/// What happened to the log file, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    Append,
    Sync,
    Reply,
}

/// A log file that records its calls, can hold `sync` until released, and can fail
/// appends as a full disk does.
struct Recorder {
    inner: DiskLog,
    events: Arc<Mutex<Vec<Event>>>,
    /// While `true`, `sync` waits.
    held: Arc<(Mutex<bool>, Condvar)>,
    syncs_waiting: Arc<AtomicUsize>,
    full: Arc<AtomicBool>,
}

impl LogFile for Recorder {
    fn append(&self, data: &[u8]) -> io::Result<()> {
        if self.full.load(Ordering::SeqCst) {
            return Err(io::Error::from(io::ErrorKind::StorageFull));
        }
        self.events.lock().unwrap().push(Event::Append);
        self.inner.append(data)
    }

    fn sync(&self) -> io::Result<()> {
        let (lock, wake) = &*self.held;
        let mut held = lock.lock().unwrap();
        self.syncs_waiting.fetch_add(1, Ordering::SeqCst);
        while *held {
            held = wake.wait(held).unwrap();
        }
        self.syncs_waiting.fetch_sub(1, Ordering::SeqCst);
        self.events.lock().unwrap().push(Event::Sync);
        self.inner.sync()
    }

    fn truncate(&self, len: u64) -> io::Result<()> {
        self.inner.truncate(len)
    }

    fn write_header(&self, data: &[u8]) -> io::Result<()> {
        self.inner.write_header(data)
    }

    fn write_reach(&self, data: &[u8]) -> io::Result<()> {
        self.inner.write_reach(data)
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.inner.read_at(buf, offset)
    }

    fn replace(&self, file: std::fs::File) {
        self.inner.replace(file)
    }
}

/// The handles a test keeps on its [`Recorder`].
#[derive(Clone, Default)]
struct Probe {
    events: Arc<Mutex<Vec<Event>>>,
    held: Arc<(Mutex<bool>, Condvar)>,
    syncs_waiting: Arc<AtomicUsize>,
    full: Arc<AtomicBool>,
}

impl Probe {
    fn open(&self, dir: &Path, options: DurableOptions) -> DurableBackend {
        let probe = self.clone();
        DurableBackend::open_logged(dir, options, move |file| {
            Arc::new(Recorder {
                inner: DiskLog::new(file),
                events: probe.events,
                held: probe.held,
                syncs_waiting: probe.syncs_waiting,
                full: probe.full,
            })
        })
        .unwrap()
    }

    fn hold(&self, held: bool) {
        let (lock, wake) = &*self.held;
        *lock.lock().unwrap() = held;
        wake.notify_all();
    }

    fn push(&self, e: Event) {
        self.events.lock().unwrap().push(e);
    }

    fn take(&self) -> Vec<Event> {
        std::mem::take(&mut *self.events.lock().unwrap())
    }
}

pub(super) fn insert(rk: &str, v: i32) -> WriteOp {
    let mut e = Entity::new("p", rk);
    e.set("V", Value::Int32(v));
    WriteOp::Insert { entity: e }
}

/// No checkpoint (nor flush) unless asked: the log keeps every record.
pub(super) fn keep_log(fsync: FsyncPolicy) -> DurableOptions {
    DurableOptions::default()
        .with_cache_bytes(8 << 20)
        .with_fsync(fsync)
        .with_checkpoints(u64::MAX, Duration::from_secs(3600))
        .with_flush_interval(Duration::from_secs(3600))
}

/// Waits (up to 10 s) for `done`.
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn under_always_a_reply_waits_for_the_fsync_of_its_record() {
    let dir = tempfile::tempdir().unwrap();
    let probe = Probe::default();
    let store = Arc::new(probe.open(dir.path(), keep_log(FsyncPolicy::Always)));
    store.create_table("t1x").unwrap();
    probe.take();
    // Hold every fsync: the write must not return while its record is unsynced.
    probe.hold(true);
    let (done, answer) = mpsc::channel();
    let writer = {
        let store = store.clone();
        let probe = probe.clone();
        std::thread::spawn(move || {
            let r = store.write("t1x", insert("a", 1));
            probe.push(Event::Reply);
            done.send(r.is_ok()).unwrap();
        })
    };
    eventually("the writer to reach fsync", || {
        probe.syncs_waiting.load(Ordering::SeqCst) > 0
    });
    assert!(
        answer.recv_timeout(Duration::from_millis(200)).is_err(),
        "the write was acknowledged before its record was fsynced"
    );
    assert!(
        store.get("t1x", "p", "a").unwrap().is_none(),
        "visible before durable"
    );
    probe.hold(false);
    assert!(answer.recv_timeout(Duration::from_secs(10)).unwrap());
    writer.join().unwrap();
    assert_eq!(probe.take(), [Event::Append, Event::Sync, Event::Reply]);
    assert!(store.get("t1x", "p", "a").unwrap().is_some());
    let stats = store.write_log_stats();
    assert_eq!(
        (stats.fsync_policy.as_str(), stats.unsynced_records),
        ("always", 0)
    );
    assert!(stats.fsyncs >= 2 && stats.records >= 2, "{stats:?}");
}

/// A store under `--fsync interval=20` that keeps its whole log, with table `t1x`, and the
/// probe on its log (the directory lives as long as the first element).
fn interval_store() -> (tempfile::TempDir, Probe, DurableBackend) {
    let dir = tempfile::tempdir().unwrap();
    let probe = Probe::default();
    let store = probe.open(
        dir.path(),
        keep_log(FsyncPolicy::Interval(Duration::from_millis(20))),
    );
    store.create_table("t1x").unwrap();
    (dir, probe, store)
}

#[test]
fn under_an_interval_a_reply_never_waits_for_fsync() {
    let (_dir, probe, store) = interval_store();
    // Every fsync hangs: writes are still acknowledged (written to the OS)…
    probe.hold(true);
    probe.take();
    for i in 0..5 {
        store.write("t1x", insert(&format!("r{i}"), i)).unwrap();
    }
    assert!(!probe.take().contains(&Event::Sync));
    // …and the background fsync catches up once the disk answers.
    probe.hold(false);
    eventually("the background fsync", || {
        store.write_log_stats().unsynced_records == 0
    });
    assert!(probe.take().contains(&Event::Sync));
    store.close().unwrap();
}

/// Polls `pending` once with a waker that counts its wake-ups.
fn poll_once(pending: &mut PendingWrite, wakes: &Arc<AtomicUsize>) -> Poll<Vec<Written>> {
    struct Count(Arc<AtomicUsize>);
    impl std::task::Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let waker = std::task::Waker::from(Arc::new(Count(wakes.clone())));
    let mut cx = std::task::Context::from_waker(&waker);
    std::pin::Pin::new(pending)
        .poll(&mut cx)
        .map(|outcome| outcome.unwrap())
}

#[test]
fn writes_submitted_in_one_turn_of_an_event_loop_share_one_log_append() {
    use std::future::Future;
    let (_dir, probe, store) = interval_store();
    probe.take();
    // Three writes queued as three tasks of one event loop would: nothing is committed
    // before the first of them is polled twice.
    let mut first = store.submit_batch("t1x", vec![insert("a", 1)]);
    let mut second = store.submit_batch("t1x", vec![insert("b", 2)]);
    let mut third = store.submit_batch("t1x", vec![insert("a", 3)]);
    assert!(store.get("t1x", "p", "a").unwrap().is_none());
    assert_eq!(probe.take(), []);
    let wakes = Arc::new(AtomicUsize::new(0));
    // The first poll yields (waking its task at once), the second commits all three.
    assert!(poll_once(&mut first, &wakes).is_pending());
    assert_eq!(wakes.load(Ordering::SeqCst), 1);
    assert_eq!(probe.take(), []);
    let Poll::Ready(written) = poll_once(&mut first, &wakes) else {
        panic!("the second poll commits");
    };
    assert_eq!(written.len(), 1);
    assert_eq!(probe.take(), [Event::Append], "one append for the group");
    // The others were answered by that commit: ready at their first poll, in order (the
    // third, a second insert of `a`, failed as it would alone).
    assert!(matches!(poll_once(&mut second, &wakes), Poll::Ready(w) if w.len() == 1));
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let Poll::Ready(Err(failed)) = std::pin::Pin::new(&mut third).poll(&mut cx) else {
        panic!("the third write was answered");
    };
    assert!(
        matches!(failed.error, StoreError::EntityAlreadyExists { .. }),
        "{failed:?}"
    );
    assert_eq!(wakes.load(Ordering::SeqCst), 1);
    let value = |rk| {
        store
            .get("t1x", "p", rk)
            .unwrap()
            .map(|e| e.get("V").map(|v| v.to_owned()))
    };
    assert_eq!(value("a"), Some(Some(Value::Int32(1))));
    assert_eq!(value("b"), Some(Some(Value::Int32(2))));
    // A queued write is committed however its handle ends: dropped unpolled, or waited for.
    drop(store.submit_batch("t1x", vec![insert("c", 4)]));
    assert_eq!(value("c"), Some(Some(Value::Int32(4))));
    let written = store
        .submit_batch("t1x", vec![insert("d", 5)])
        .wait()
        .unwrap();
    assert_eq!(written.len(), 1);
    assert_eq!(value("d"), Some(Some(Value::Int32(5))));
    assert_eq!(probe.take(), [Event::Append, Event::Append]);
    // After the close, a submitted write is refused, not queued.
    store.close().unwrap();
    let refused = store.submit_batch("t1x", vec![insert("e", 6)]).wait();
    assert!(matches!(refused, Err(e) if matches!(e.error, StoreError::Closed)));
}

/// A data directory whose durable file holds `first` (checkpointed), and the bytes of the
/// log written after it by `second` (never checkpointed): what a crash leaves.
fn crashed(first: &[(&str, i32)], second: &[(&str, i32)]) -> (tempfile::TempDir, Vec<u8>, Vec<u8>) {
    crashed_with(FsyncPolicy::default(), first, second)
}

/// [`crashed`], the second session under `fsync`.
pub(super) fn crashed_with(
    fsync: FsyncPolicy,
    first: &[(&str, i32)],
    second: &[(&str, i32)],
) -> (tempfile::TempDir, Vec<u8>, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let store = DurableBackend::open_with(dir.path(), keep_log(FsyncPolicy::default())).unwrap();
    store.create_table("t1x").unwrap();
    for (rk, v) in first {
        store.write("t1x", insert(rk, *v)).unwrap();
    }
    store.close().unwrap();
    let durable = std::fs::read(dir.path().join(DATA_FILE)).unwrap();
    let store = DurableBackend::open_with(dir.path(), keep_log(fsync)).unwrap();
    for (rk, v) in second {
        store.write("t1x", insert(rk, *v)).unwrap();
    }
    let log = std::fs::read(dir.path().join(WAL_FILE)).unwrap();
    store.close().unwrap();
    (dir, durable, log)
}

/// Opens a data directory made of these two files.
pub(super) fn open_files(
    durable: &[u8],
    log: &[u8],
) -> Result<(tempfile::TempDir, DurableBackend), OpenError> {
    open_files_with(durable, log, keep_log(FsyncPolicy::default()))
}

/// [`open_files`] with `options`.
pub(super) fn open_files_with(
    durable: &[u8],
    log: &[u8],
    options: DurableOptions,
) -> Result<(tempfile::TempDir, DurableBackend), OpenError> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(DATA_FILE), durable).unwrap();
    std::fs::write(dir.path().join(WAL_FILE), log).unwrap();
    let store = DurableBackend::open_with(dir.path(), options)?;
    Ok((dir, store))
}

pub(super) fn values(store: &DurableBackend, keys: &[&str]) -> Vec<Option<i32>> {
    keys.iter()
        .map(|rk| {
            store
                .get("t1x", "p", rk)
                .unwrap()
                .and_then(|e| match e.custom("V") {
                    Some(Value::Int32(v)) => Some(*v),
                    _ => None,
                })
        })
        .collect()
}

#[test]
fn replay_restores_what_the_log_holds_past_the_checkpoint() {
    let (_d, durable, log) = crashed(&[("a", 1)], &[("b", 2), ("c", 3)]);
    // The durable file alone has only the first session (the log as a checkpoint leaves it;
    // a header whose reach marker names fsynced records refuses to open: `trust_tests.rs`).
    let (_e, store) = open_files(&durable, &header_only(&unsynced(&log))).unwrap();
    assert_eq!(values(&store, &["a", "b", "c"]), [Some(1), None, None]);
    drop(store);
    // With the log, everything acknowledged is back, Timestamps included.
    let (dir, store) = open_files(&durable, &log).unwrap();
    assert_eq!(
        values(&store, &["a", "b", "c"]),
        [Some(1), Some(2), Some(3)]
    );
    // The replay was checkpointed: the log is empty, and a new write gets a later ETag.
    assert_eq!(
        std::fs::metadata(dir.path().join(WAL_FILE)).unwrap().len(),
        HEADER_LEN
    );
    let before = store.get("t1x", "p", "c").unwrap().unwrap().timestamp();
    let w = store.write("t1x", insert("d", 4)).unwrap();
    assert!(Some(w.timestamp) > before);
    store.close().unwrap();
    let store = DurableBackend::open(dir.path()).unwrap();
    assert_eq!(values(&store, &["a", "d"]), [Some(1), Some(4)]);
}

/// The log as it was before any `fsync` of its records: its reach marker (`format/log.rs`)
/// all zeros, whether or not the background `fsync` ran before the test copied it.
pub(super) fn unsynced(log: &[u8]) -> Vec<u8> {
    let mut log = log.to_vec();
    log[REACH_AT as usize..HEADER_LEN as usize].fill(0);
    log
}

/// The log's header alone (the log right after a checkpoint).
fn header_only(log: &[u8]) -> Vec<u8> {
    log[..HEADER_LEN as usize].to_vec()
}

#[test]
fn a_torn_or_damaged_last_record_is_discarded() {
    // Records written after the last fsync (the background fsync's next round).
    let (_d, durable, log) = crashed(&[("a", 1)], &[("b", 2), ("c", 3)]);
    let log = unsynced(&log);
    // Cut anywhere inside the last record: it was never acknowledged.
    let last_start = {
        let (_d2, _, one) = crashed(&[("a", 1)], &[("b", 2)]);
        one.len()
    };
    for cut in [last_start + 1, last_start + 20, log.len() - 1] {
        let (_e, store) = open_files(&durable, &log[..cut]).unwrap();
        assert_eq!(
            values(&store, &["a", "b", "c"]),
            [Some(1), Some(2), None],
            "cut {cut}"
        );
    }
    // A checksum mismatch in the last record.
    let mut flipped = log.clone();
    let at = log.len() - 3;
    flipped[at] ^= 0x10;
    let (_e, store) = open_files(&durable, &flipped).unwrap();
    assert_eq!(values(&store, &["a", "b", "c"]), [Some(1), Some(2), None]);
}

#[test]
fn damage_before_intact_records_refuses_to_open() {
    let (_d, durable, log) = crashed(&[("a", 1)], &[("b", 2), ("c", 3)]);
    let mut flipped = log.clone();
    // Inside the first record's body (after the header and the record head).
    flipped[HEADER_LEN as usize + 20] ^= 0x10;
    let err = open_files(&durable, &flipped).expect_err("a corrupt log must not open");
    assert!(
        matches!(&err, OpenError::Corrupt { path, .. } if path.ends_with(WAL_FILE)),
        "{err}"
    );
    assert!(err.to_string().contains("followed by intact"), "{err}");
}

#[test]
fn an_empty_or_missing_log_refuses_to_open_unless_the_loss_is_accepted() {
    let (_d, durable, _) = crashed(&[("a", 1)], &[("b", 2)]);
    // Cut to nothing, or zeros: the data file says a log was created.
    for log in [Vec::new(), vec![0; 4096]] {
        let err = open_files(&durable, &log).expect_err("a cut log must not open");
        assert!(
            matches!(&err, OpenError::LogTruncated { path, .. } if path.ends_with(WAL_FILE)),
            "{err}"
        );
    }
    // Deleted.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(DATA_FILE), &durable).unwrap();
    let err = DurableBackend::open(dir.path()).expect_err("a missing log must not open");
    assert!(matches!(&err, OpenError::LogMissing { .. }), "{err}");
    assert!(err.to_string().contains("--accept-log-loss"), "{err}");
    assert!(!dir.path().join(WAL_FILE).exists(), "nothing was created");
    // Accepted: the durable state, and a new log that later opens need no flag.
    let accept = DurableOptions::default().with_accept_log_loss(true);
    let store = DurableBackend::open_with(dir.path(), accept).unwrap();
    assert_eq!(values(&store, &["a", "b"]), [Some(1), None]);
    store.write("t1x", insert("c", 3)).unwrap();
    store.close().unwrap();
    let store = DurableBackend::open(dir.path()).unwrap();
    assert_eq!(values(&store, &["a", "b", "c"]), [Some(1), None, Some(3)]);
}

#[test]
fn tables_created_and_deleted_are_replayed_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = DurableBackend::open_with(dir.path(), keep_log(FsyncPolicy::default())).unwrap();
    store.close().unwrap();
    let durable = std::fs::read(dir.path().join(DATA_FILE)).unwrap();
    let store = DurableBackend::open_with(dir.path(), keep_log(FsyncPolicy::default())).unwrap();
    store.create_table("Gone").unwrap();
    store.write("gone", insert("x", 1)).unwrap();
    store.delete_table("gone").unwrap();
    store.create_table("Kept").unwrap();
    store
        .write_batch("kept", vec![insert("y", 2), insert("z", 3)])
        .unwrap();
    store
        .write(
            "kept",
            WriteOp::Delete {
                partition_key: "p".into(),
                row_key: "z".into(),
                if_match: crate::op::IfMatch::Any,
            },
        )
        .unwrap();
    let log = std::fs::read(dir.path().join(WAL_FILE)).unwrap();
    store.close().unwrap();
    let (_e, store) = open_files(&durable, &log).unwrap();
    let names: Vec<String> = store
        .tables()
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["Kept"]);
    assert!(store.get("kept", "p", "y").unwrap().is_some());
    assert!(store.get("kept", "p", "z").unwrap().is_none());
    // Ids stay unique after the replay: a new table does not reuse "Gone"'s.
    store.create_table("Later").unwrap();
    store.write("later", insert("w", 5)).unwrap();
    assert!(store.get("kept", "p", "w").unwrap().is_none());
}

#[test]
fn a_log_that_cannot_be_written_refuses_writes_until_it_can() {
    let (dir, probe, store) = interval_store();
    store.write("t1x", insert("a", 1)).unwrap();
    assert!(store.ready().is_ok());
    probe.full.store(true, Ordering::SeqCst);
    let err = store.write("t1x", insert("b", 2)).unwrap_err();
    assert!(matches!(err, StoreError::WritesRefused(_)), "{err}");
    assert!(err.to_string().contains("full"), "{err}");
    assert_eq!(err.code(), tableq_model::ErrorCode::ServerBusy);
    let not_ready = store.ready().unwrap_err();
    assert!(not_ready.to_string().contains("full"), "{not_ready}");
    // Reads go on; the refused write left nothing.
    assert_eq!(values(&store, &["a", "b"]), [Some(1), None]);
    // Space is back: writes resume by themselves.
    probe.full.store(false, Ordering::SeqCst);
    eventually("readiness", || store.ready().is_ok());
    store.write("t1x", insert("b", 2)).unwrap();
    store.close().unwrap();
    let store = DurableBackend::open(dir.path()).unwrap();
    assert_eq!(values(&store, &["a", "b"]), [Some(1), Some(2)]);
}

#[test]
fn checkpoints_empty_the_log_when_it_passes_its_bound() {
    let dir = tempfile::tempdir().unwrap();
    let options = DurableOptions::default()
        .with_cache_bytes(8 << 20)
        .with_checkpoints(4096, Duration::from_secs(3600));
    let store = DurableBackend::open_with(dir.path(), options).unwrap();
    store.create_table("t1x").unwrap();
    for i in 0..200 {
        store.write("t1x", insert(&format!("r{i:03}"), i)).unwrap();
    }
    // Checkpoints are the background thread's: the log is bounded once it caught up (a
    // writer commits nothing while one is due, so the log never passes the bound by more
    // than one group).
    eventually("the background checkpoint", || {
        store.write_log_stats().log_bytes < 4096 + 1024
    });
    let stats = store.write_log_stats();
    // ≈ 80 bytes a record: one checkpoint per ≈ 50 writes.
    assert!(
        stats.checkpoints >= stats.appended_bytes / (4096 + 1024),
        "{stats:?}"
    );
    assert!(stats.checkpoints >= 3, "{stats:?}");
    assert!(std::fs::metadata(dir.path().join(WAL_FILE)).unwrap().len() < 4096 + 1024);
}

/// What `kill -9` leaves after a checkpoint and later flushes (the data file as the page
/// cache holds it, the log) opens without redb's full repair: the checkpoint recorded redb's
/// allocator state (`set_quick_repair`), which a repair otherwise rebuilds by walking every
/// page of the file (1.3 s at 10 M entities). Nothing acknowledged is lost either way.
#[test]
fn a_crash_after_a_checkpoint_opens_without_a_full_repair() {
    let dir = tempfile::tempdir().unwrap();
    let options = DurableOptions::default()
        .with_cache_bytes(8 << 20)
        .with_memtable_bytes(2048)
        .with_flush_interval(Duration::from_millis(20))
        .with_checkpoints(8192, Duration::from_secs(3600));
    let store = DurableBackend::open_with(dir.path(), options).unwrap();
    store.create_table("t1x").unwrap();
    for i in 0..300 {
        store.write("t1x", insert(&format!("r{i:03}"), i)).unwrap();
    }
    eventually("a checkpoint", || {
        let stats = store.write_log_stats();
        stats.checkpoints >= 1 && stats.log_bytes < 8192
    });
    // A few writes after it, flushed (non-durable commits) but not checkpointed.
    for i in 300..310 {
        store.write("t1x", insert(&format!("r{i:03}"), i)).unwrap();
    }
    std::thread::sleep(Duration::from_millis(100));
    let durable = std::fs::read(dir.path().join(DATA_FILE)).unwrap();
    let log = std::fs::read(dir.path().join(WAL_FILE)).unwrap();
    store.close().unwrap();

    let image = tempfile::tempdir().unwrap();
    let path = image.path().join(DATA_FILE);
    std::fs::write(&path, &durable).unwrap();
    let repaired = Arc::new(AtomicBool::new(false));
    let seen = Arc::clone(&repaired);
    let db = redb::Database::builder()
        .set_repair_callback(move |_| seen.store(true, Ordering::SeqCst))
        .open(&path)
        .unwrap();
    drop(db);
    assert!(
        !repaired.load(Ordering::SeqCst),
        "redb walked the file to repair it"
    );

    let (_dir, store) = open_files(&durable, &log).unwrap();
    let keys: Vec<String> = (0..310).map(|i| format!("r{i:03}")).collect();
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let want: Vec<Option<i32>> = (0..310).map(Some).collect();
    assert_eq!(values(&store, &keys), want);
}

#[test]
fn an_uninitialised_data_file_is_replaced() {
    // What an older build left after a start on a full disk: a file that never got its
    // header (empty, or zero-filled). It holds no data: a start replaces it.
    for contents in [Vec::new(), vec![0u8; 3 << 20]] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(DATA_FILE), &contents).unwrap();
        let store = DurableBackend::open(dir.path()).unwrap();
        store.create_table("t1x").unwrap();
        store.write("t1x", insert("a", 1)).unwrap();
        store.close().unwrap();
        let store = DurableBackend::open(dir.path()).unwrap();
        assert_eq!(values(&store, &["a"]), [Some(1)]);
        // No temporary file is left behind.
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
    }
    // A file that is not all zeros is never discarded: it is reported.
    let dir = tempfile::tempdir().unwrap();
    let mut junk = vec![0u8; 4096];
    junk[4000] = 1;
    std::fs::write(dir.path().join(DATA_FILE), &junk).unwrap();
    assert!(DurableBackend::open(dir.path()).is_err());
    assert_eq!(std::fs::read(dir.path().join(DATA_FILE)).unwrap(), junk);
}

#[test]
fn settings_are_replayed_with_the_tables_they_belong_to() {
    use crate::acl::{AccessPolicy, SignedIdentifier};
    use crate::service::ServiceProperties;
    let dir = tempfile::tempdir().unwrap();
    let store = DurableBackend::open_with(dir.path(), keep_log(FsyncPolicy::default())).unwrap();
    store.create_table("Gone").unwrap();
    store.close().unwrap();
    let durable = std::fs::read(dir.path().join(DATA_FILE)).unwrap();
    let store = DurableBackend::open_with(dir.path(), keep_log(FsyncPolicy::default())).unwrap();
    let mut properties = ServiceProperties::default();
    properties.logging.read = true;
    store.set_service_properties(&properties).unwrap();
    let policy = |id: &str| SignedIdentifier {
        id: id.into(),
        policy: AccessPolicy {
            start: None,
            expiry: None,
            permission: Some("r".into()),
        },
    };
    store.set_table_acl("gone", &[policy("old")]).unwrap();
    store.delete_table("gone").unwrap();
    store.create_table("Kept").unwrap();
    store.set_table_acl("kept", &[policy("p1")]).unwrap();
    store.create_table("Cleared").unwrap();
    store.set_table_acl("cleared", &[policy("p2")]).unwrap();
    store.set_table_acl("cleared", &[]).unwrap();
    let log = std::fs::read(dir.path().join(WAL_FILE)).unwrap();
    store.close().unwrap();
    let (_e, store) = open_files(&durable, &log).unwrap();
    assert_eq!(store.service_properties().unwrap(), properties);
    assert_eq!(store.table_acl("kept").unwrap(), [policy("p1")]);
    assert!(store.table_acl("cleared").unwrap().is_empty());
    // The deleted table's policies went with it: a table re-created under its name has none.
    store.create_table("Gone").unwrap();
    assert!(store.table_acl("gone").unwrap().is_empty());
}

/// The value the store's metrics report under `name` (a test fails without one).
pub(super) fn metric(store: &DurableBackend, name: &str) -> crate::metrics::SampleValue {
    store
        .metrics()
        .samples()
        .iter()
        .find(|s| s.name == name)
        .map(|s| s.value.clone())
        .unwrap_or_else(|| panic!("no {name}"))
}

#[test]
fn metrics_report_the_log_the_data_file_and_refusals() {
    use crate::metrics::SampleValue;
    let dir = tempfile::tempdir().unwrap();
    let store = DurableBackend::open_with(dir.path(), keep_log(FsyncPolicy::default())).unwrap();
    store.create_table("t1x").unwrap();
    store.write("t1x", insert("a", 1)).unwrap();
    let value = |name: &str| metric(&store, name);
    assert_eq!(value("wal_records_total"), SampleValue::Counter(2));
    assert!(matches!(value("wal_log_bytes"), SampleValue::Gauge(b) if b > 0.0));
    assert!(matches!(value("data_file_bytes"), SampleValue::Gauge(b) if b > 0.0));
    assert_eq!(value("writes_refused"), SampleValue::Gauge(0.0));
    // The write waits in the memtable until a flush (a second at most).
    assert!(matches!(value("memtable_bytes"), SampleValue::Gauge(b) if b > 0.0));
    assert_eq!(value("flushes_total"), SampleValue::Counter(0));
    store.gate.with_writer(|w| w.flush()).unwrap();
    assert_eq!(value("memtable_bytes"), SampleValue::Gauge(0.0));
    assert_eq!(value("flushes_total"), SampleValue::Counter(1));
    store.close().unwrap();
}

#[test]
fn readers_of_one_version_share_its_rows_table_until_a_flush_lets_it_go() {
    let dir = tempfile::tempdir().unwrap();
    let store = DurableBackend::open_with(dir.path(), keep_log(FsyncPolicy::default())).unwrap();
    store.create_table("t1x").unwrap();
    store.write("t1x", insert("a", 1)).unwrap();
    store.gate.with_writer(|w| w.flush()).unwrap();
    let kept = || store.shared.rows_cache.lock().unwrap().clone();
    let first = store.snapshot("t1x").unwrap();
    let (version, table) = kept().expect("the first reader keeps the version's table");
    let second = store.snapshot("t1x").unwrap();
    let (again, same) = kept().unwrap();
    assert_eq!(again, version);
    assert!(Arc::ptr_eq(&table, &same), "the second reader shares it");
    // The kept slot, the two snapshots and the two clones here.
    assert_eq!(Arc::strong_count(&table), 5);
    drop((same, second));

    store.write("t1x", insert("b", 2)).unwrap();
    store.gate.with_writer(|w| w.flush()).unwrap();
    assert!(kept().is_none(), "the flush let the old version's table go");
    // A snapshot of the old version still reads its own rows (without "b").
    assert!(first.entity("p", "a").unwrap().is_some());
    assert!(first.entity("p", "b").unwrap().is_none());
    assert_eq!(
        Arc::strong_count(&table),
        2,
        "only the old snapshot and this clone"
    );
    drop(first);
    let third = store.snapshot("t1x").unwrap();
    let (newer, fresh) = kept().unwrap();
    assert!(newer > version);
    assert!(!Arc::ptr_eq(&table, &fresh));
    assert!(third.entity("p", "b").unwrap().is_some());
    // Point gets through the backend read the new version, owned or in place.
    assert!(store.get("t1x", "p", "b").unwrap().is_some());
    let mut seen = Vec::new();
    let found = store
        .get_row("t1x", "p", "b", &mut |row| {
            seen.push((
                row.row_key().to_owned(),
                row.custom("V").map(|v| v.to_owned()),
            ))
        })
        .unwrap();
    assert!(found);
    assert_eq!(seen, [("b".to_owned(), Some(Value::Int32(2)))]);
    assert!(
        !store
            .get_row("t1x", "p", "zz", &mut |_| panic!("no row"))
            .unwrap()
    );
    drop(third);
    store.close().unwrap();
}

// ---------------------------------------------------------------------------------------
// The memtable in front of redb: reads merge it with the blocks exactly, whatever was
// flushed when.

mod memtable {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;
    use tableq_exec::{EntitySource, Tuning};
    use tableq_model::order::OrdinalString;
    use tableq_model::{EntityView, ValueRef};
    use tableq_parser::{FilterOptions, parse_filter};

    /// One step: an upsert or a delete of (partition, row), a flush of the memtables into
    /// redb, a slice of a flush (one block; the flush begins if none is in progress, and
    /// the steps after it write between its slices), or a reopen (a checkpoint: everything
    /// in blocks).
    #[derive(Debug, Clone)]
    enum Step {
        Put(u8, u8, i32),
        Delete(u8, u8),
        Batch(Vec<(u8, u8, Option<i32>)>),
        Flush,
        Slice,
        Reopen,
    }

    fn arb_step() -> impl Strategy<Value = Step> {
        prop_oneof![
            8 => (0u8..4, 0u8..24, -9i32..9).prop_map(|(p, r, v)| Step::Put(p, r, v)),
            3 => (0u8..4, 0u8..24).prop_map(|(p, r)| Step::Delete(p, r)),
            2 => proptest::collection::vec(
                (0u8..4, 0u8..24, proptest::option::weighted(0.7, -9i32..9)),
                1..12
            )
            .prop_map(Step::Batch),
            2 => Just(Step::Flush),
            3 => Just(Step::Slice),
            1 => Just(Step::Reopen),
        ]
    }

    // Keys around the UTF-16 / UTF-8 order difference, as the block layout must handle.
    const PKS: [&str; 4] = ["a", "b\u{E000}", "b\u{10000}", "c"];

    fn rk(r: u8) -> String {
        if r.is_multiple_of(5) {
            format!("\u{FFFD}{r:02}")
        } else {
            format!("r{r:02}")
        }
    }

    type Model = BTreeMap<(OrdinalString, OrdinalString), i32>;

    fn op(p: u8, r: u8, v: Option<i32>, model: &Model) -> Option<WriteOp> {
        let (pk, rk) = (PKS[p as usize], rk(r));
        match v {
            Some(v) => {
                let mut e = Entity::new(pk, &rk);
                e.set("V", Value::Int32(v));
                Some(WriteOp::InsertOrReplace { entity: e })
            }
            None => model
                .contains_key(&(OrdinalString(pk.into()), OrdinalString(rk.clone())))
                .then(|| WriteOp::Delete {
                    partition_key: pk.into(),
                    row_key: rk,
                    if_match: crate::op::IfMatch::Any,
                }),
        }
    }

    fn apply(model: &mut Model, p: u8, r: u8, v: Option<i32>) {
        let key = (OrdinalString(PKS[p as usize].into()), OrdinalString(rk(r)));
        match v {
            Some(v) => model.insert(key, v),
            None => model.remove(&key),
        };
    }

    const FILTERS: &[&str] = &[
        "",
        "PartitionKey eq 'b\u{E000}'",
        "PartitionKey ge 'b' and PartitionKey lt 'c'",
        "RowKey ge 'r05' and RowKey lt 'r13'",
        "PartitionKey eq 'a' and RowKey gt 'r07'",
        "RowKey ge '\u{FFFD}'",
        "V lt 0",
        "PartitionKey eq 'c' and RowKey eq 'r03'",
    ];

    /// What every read path returns for the table, checked against the model.
    fn check(store: &DurableBackend, model: &Model) -> Result<(), TestCaseError> {
        let snapshot = store
            .snapshot("t1x")
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        // Point reads, present and absent keys.
        for p in 0..4u8 {
            for r in 0..24u8 {
                let key = (OrdinalString(PKS[p as usize].into()), OrdinalString(rk(r)));
                let want = model.get(&key).copied();
                let got = snapshot.get(PKS[p as usize], &rk(r)).unwrap().map(|row| {
                    match row.custom("V") {
                        Some(ValueRef::Int32(v)) => v,
                        _ => i32::MIN,
                    }
                });
                prop_assert_eq!(got, want, "get {:?}", key);
                // The backend's point reads (a snapshot each, sharing the version's rows
                // table), owned and in place.
                let owned = store.get("t1x", PKS[p as usize], &rk(r)).unwrap().map(|e| {
                    match e.custom("V") {
                        Some(Value::Int32(v)) => *v,
                        _ => i32::MIN,
                    }
                });
                prop_assert_eq!(owned, want, "Backend::get {:?}", key);
                let mut in_place = None;
                let found = store
                    .get_row("t1x", PKS[p as usize], &rk(r), &mut |row| {
                        in_place = Some(match row.custom("V") {
                            Some(ValueRef::Int32(v)) => v,
                            _ => i32::MIN,
                        });
                    })
                    .unwrap();
                prop_assert_eq!(found, want.is_some());
                prop_assert_eq!(in_place, want, "Backend::get_row {:?}", key);
            }
        }
        let tiny = Tuning {
            initial_chunk_rows: 2,
            max_chunk_rows: 4,
            small_wave_rows: 0,
        };
        for filter in FILTERS {
            let parsed = parse_filter(filter, &FilterOptions::default()).unwrap();
            let plan = tableq_planner::plan(&parsed, None, None);
            let want: Vec<(String, String, i32)> = model
                .iter()
                .map(|((p, r), v)| {
                    let mut e = Entity::new(&p.0, &r.0);
                    e.set("V", Value::Int32(*v));
                    e
                })
                .filter(|e| tableq_planner::ast_eval::matches(&parsed, e))
                .map(|e| {
                    let v = match e.custom("V") {
                        Some(Value::Int32(v)) => *v,
                        _ => 0,
                    };
                    (e.partition_key().to_owned(), e.row_key().to_owned(), v)
                })
                .collect();
            for tuning in [Tuning::default(), tiny] {
                let (rows, _) = Executor::new(&snapshot)
                    .with_tuning(tuning)
                    .execute_all(&plan, &PageOptions::default())
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                let got: Vec<(String, String, i32)> = rows
                    .iter()
                    .map(|r| {
                        let e = &r.entity;
                        let v = match e.custom("V") {
                            Some(Value::Int32(v)) => *v,
                            _ => i32::MIN,
                        };
                        (e.partition_key().to_owned(), e.row_key().to_owned(), v)
                    })
                    .collect();
                prop_assert_eq!(&got, &want, "filter {:?}", filter);
            }
        }
        // Paging one row at a time resumes exactly.
        let plan = tableq_planner::plan(
            &parse_filter("", &FilterOptions::default()).unwrap(),
            None,
            None,
        );
        let mut next = None;
        let mut paged = Vec::new();
        loop {
            let page = store
                .query(
                    "t1x",
                    &plan,
                    next.as_ref(),
                    &PageOptions::default().with_page_size(3),
                    &mut |r| {
                        paged.push((
                            r.row().partition_key().to_owned(),
                            r.row().row_key().to_owned(),
                        ))
                    },
                )
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            match page.continuation {
                Some(k) => next = Some(k),
                None => break,
            }
        }
        let want: Vec<(String, String)> = model
            .keys()
            .map(|(p, r)| (p.0.clone(), r.0.clone()))
            .collect();
        prop_assert_eq!(paged, want, "paging");
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn reads_merge_the_memtable_and_the_blocks_exactly(
            steps in proptest::collection::vec(arb_step(), 1..40),
            rows in 2usize..6,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let mut options = keep_log(FsyncPolicy::default())
                .with_block_limits(rows, 1 << 20)
                .with_memtable_bytes(usize::MAX);
            // A slice folds one block.
            options.flush_slice = Duration::ZERO;
            let mut store = DurableBackend::open_with(dir.path(), options.clone()).unwrap();
            store.create_table("t1x").unwrap();
            let mut model = Model::new();
            for (i, step) in steps.iter().enumerate() {
                match step {
                    Step::Put(p, r, v) => {
                        let op = op(*p, *r, Some(*v), &model).unwrap();
                        store.write("t1x", op).unwrap();
                        apply(&mut model, *p, *r, Some(*v));
                    }
                    Step::Delete(p, r) => {
                        if let Some(op) = op(*p, *r, None, &model) {
                            store.write("t1x", op).unwrap();
                            apply(&mut model, *p, *r, None);
                        }
                    }
                    Step::Batch(changes) => {
                        let mut seen = std::collections::HashSet::new();
                        let mut ops = Vec::new();
                        let mut next = model.clone();
                        for (p, r, v) in changes {
                            if !seen.insert((*p, *r)) {
                                continue;
                            }
                            if let Some(op) = op(*p, *r, *v, &next) {
                                ops.push(op);
                                apply(&mut next, *p, *r, *v);
                            }
                        }
                        if !ops.is_empty() {
                            store.write_batch("t1x", ops).unwrap();
                            model = next;
                        }
                    }
                    Step::Flush => store.gate.with_writer(|w| w.flush()).unwrap(),
                    Step::Slice => store.gate.with_writer(|w| w.slice()).unwrap(),
                    Step::Reopen => {
                        store.close().unwrap();
                        store = DurableBackend::open_with(dir.path(), options.clone()).unwrap();
                    }
                }
                if i % 4 == 3 || i + 1 == steps.len() {
                    check(&store, &model)?;
                }
            }
            store.close().unwrap();
            let store = DurableBackend::open_with(dir.path(), options).unwrap();
            check(&store, &model)?;
        }
    }
}

/// Every entity of `table`, in key order (Timestamps included).
fn all_entities(store: &DurableBackend, table: &str) -> Vec<Entity> {
    use tableq_exec::{Executor, PageOptions};
    let snapshot = store.snapshot(table).unwrap();
    let all = tableq_planner::plan::Plan {
        ranges: tableq_planner::plan::KeySet::all(),
        residual: tableq_planner::predicate::Predicate::TRUE,
        select: None,
        top: None,
    };
    let (rows, _) = Executor::new(&snapshot)
        .execute_all(&all, &PageOptions::unbounded())
        .unwrap();
    rows.into_iter().map(|r| r.entity).collect()
}

#[test]
fn replay_moves_logged_rows_into_the_tables_names_and_folds_as_it_goes() {
    let entity = |pk: &str, rk: &str, props: &[(&str, Value)]| {
        let mut e = Entity::new(pk, rk);
        for (name, value) in props {
            e.set(*name, value.clone());
        }
        WriteOp::InsertOrReplace { entity: e }
    };
    // A memtable of 1 byte: the replay folds into redb after every record.
    let options = |bytes| keep_log(FsyncPolicy::default()).with_memtable_bytes(bytes);
    let dir = tempfile::tempdir().unwrap();
    let store = DurableBackend::open_with(dir.path(), options(16 << 20)).unwrap();
    store.create_table("t1x").unwrap();
    // The table numbers Z then A (first use), …
    store
        .write("t1x", entity("p", "a", &[("Z", Value::Int32(1))]))
        .unwrap();
    store
        .write("t1x", entity("p", "b", &[("A", Value::from("x"))]))
        .unwrap();
    store.close().unwrap();
    let durable = std::fs::read(dir.path().join(DATA_FILE)).unwrap();
    let store = DurableBackend::open_with(dir.path(), options(16 << 20)).unwrap();
    // … while each record numbers its own names in the order its rows use them.
    let writes = [
        entity(
            "p",
            "c",
            &[("A", Value::from("y")), ("B", Value::Boolean(true))],
        ),
        entity(
            "p",
            "a",
            &[("C", Value::Double(2.5)), ("Z", Value::Int32(3))],
        ),
        entity("q", "", &[("B", Value::Binary(vec![1, 2]))]),
    ];
    for w in writes {
        store.write("t1x", w).unwrap();
    }
    store
        .write(
            "t1x",
            WriteOp::Delete {
                partition_key: "p".into(),
                row_key: "b".into(),
                if_match: crate::op::IfMatch::Any,
            },
        )
        .unwrap();
    // A table created, written and deleted, and another created and written, in the log.
    store.create_table("gone").unwrap();
    store
        .write("gone", entity("p", "x", &[("G", Value::Int64(7))]))
        .unwrap();
    store.delete_table("gone").unwrap();
    store.create_table("t2x").unwrap();
    store
        .write("t2x", entity("p", "y", &[("Z", Value::Int32(9))]))
        .unwrap();
    let expected = (all_entities(&store, "t1x"), all_entities(&store, "t2x"));
    assert_eq!(expected.0.len(), 3);
    let log = std::fs::read(dir.path().join(WAL_FILE)).unwrap();
    store.close().unwrap();
    for memtable in [1, 16 << 20] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(DATA_FILE), &durable).unwrap();
        std::fs::write(dir.path().join(WAL_FILE), &log).unwrap();
        let store = DurableBackend::open_with(dir.path(), options(memtable)).unwrap();
        assert_eq!(
            (all_entities(&store, "t1x"), all_entities(&store, "t2x")),
            expected,
            "memtable of {memtable} bytes"
        );
        assert!(store.snapshot("gone").is_err());
        store.close().unwrap();
        // What the replay checkpointed reads the same after another reopen.
        let store = DurableBackend::open_with(dir.path(), options(memtable)).unwrap();
        assert_eq!(all_entities(&store, "t1x"), expected.0);
        store.close().unwrap();
    }
}

#[test]
fn replay_of_many_tables_created_and_written_restores_each() {
    let dir = tempfile::tempdir().unwrap();
    let options = || keep_log(FsyncPolicy::default());
    let store = DurableBackend::open_with(dir.path(), options()).unwrap();
    store.close().unwrap();
    let durable = std::fs::read(dir.path().join(DATA_FILE)).unwrap();
    let store = DurableBackend::open_with(dir.path(), options()).unwrap();
    let tables: Vec<String> = (0..200).map(|i| format!("t{i:03}x")).collect();
    for (i, table) in tables.iter().enumerate() {
        store.create_table(table).unwrap();
        // Each table its own property names, and one shared with every other table.
        let mut e = Entity::new("p", "r");
        e.set(format!("Own{i}"), Value::Int32(i as i32));
        e.set("Shared", Value::from(table.as_str()));
        store
            .write(table, WriteOp::InsertOrReplace { entity: e })
            .unwrap();
        if i % 50 == 49 {
            store.delete_table(&tables[i - 1]).unwrap();
        }
    }
    let log = std::fs::read(dir.path().join(WAL_FILE)).unwrap();
    store.close().unwrap();
    let restart = tempfile::tempdir().unwrap();
    std::fs::write(restart.path().join(DATA_FILE), &durable).unwrap();
    std::fs::write(restart.path().join(WAL_FILE), &log).unwrap();
    let store = DurableBackend::open_with(restart.path(), options()).unwrap();
    for (i, table) in tables.iter().enumerate() {
        let deleted = i % 50 == 48;
        let got = store.get(table, "p", "r");
        if deleted {
            assert!(got.is_err(), "{table} was deleted");
            continue;
        }
        let e = got.unwrap().unwrap();
        assert_eq!(e.custom(&format!("Own{i}")), Some(&Value::Int32(i as i32)));
        assert_eq!(e.custom("Shared"), Some(&Value::from(table.as_str())));
        assert_eq!(e.len(), 2, "{table}: {e:?}");
    }
}

/// A write's operations are checked on the caller's thread (`check_ops`), but a missing
/// table is still reported before their faults, and their faults before any state is read.
#[test]
fn write_faults_are_reported_after_a_missing_table() {
    let dir = tempfile::tempdir().unwrap();
    let store = DurableBackend::open(dir.path()).unwrap();
    store.create_table("there").unwrap();
    let mut invalid = Entity::new("p", "r");
    invalid.set("Bad Name", Value::Int32(1));
    let twice = || {
        vec![
            WriteOp::Insert {
                entity: Entity::new("p", "r"),
            },
            WriteOp::Insert {
                entity: Entity::new("p", "r"),
            },
        ]
    };
    let insert = |e: &Entity| vec![WriteOp::Insert { entity: e.clone() }];
    for ops in [insert(&invalid), twice()] {
        let err = store.write_batch("nothere", ops).unwrap_err();
        assert!(matches!(err.error, StoreError::TableNotFound(_)), "{err:?}");
    }
    let err = store.write_batch("there", insert(&invalid)).unwrap_err();
    assert_eq!(
        (err.index, err.error.code()),
        (Some(0), tableq_model::ErrorCode::PropertyNameInvalid)
    );
    let err = store.write_batch("there", twice()).unwrap_err();
    assert!(
        matches!(err.error, StoreError::DuplicateRow { .. }) && err.index == Some(1),
        "{err:?}"
    );
    // The same through the non-blocking path.
    let err = store.submit_batch("there", twice()).wait().unwrap_err();
    assert!(
        matches!(err.error, StoreError::DuplicateRow { .. }),
        "{err:?}"
    );
    assert!(store.get("there", "p", "r").unwrap().is_none());
    store.close().unwrap();
}

/// Every block key in the closed data directory `dir`, with the table id it begins with.
fn stored_block_tables(dir: &Path) -> Vec<u64> {
    use super::format::tables::ROWS;
    let db = redb::Database::open(dir.join(DATA_FILE)).unwrap();
    let txn = redb::ReadableDatabase::begin_read(&db).unwrap();
    let rows = txn.open_table(ROWS).unwrap();
    redb::ReadableTable::iter(&rows)
        .unwrap()
        .map(|item| {
            let (k, _) = item.unwrap();
            u64::from_be_bytes(k.value()[..8].try_into().unwrap())
        })
        .collect()
}

/// A table deleted between two slices of a flush (`writer/flush.rs`) stays deleted: the
/// slices after the deletion skip its frozen rows, which would otherwise be written back
/// into blocks of a table that no longer exists, and a table created again under its name
/// starts empty. Writes to the other table between the slices are kept.
#[test]
fn a_table_deleted_during_a_flush_is_not_written_back_by_its_slices() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = keep_log(FsyncPolicy::default())
        .with_block_limits(2, 1 << 20)
        .with_memtable_bytes(usize::MAX);
    options.flush_slice = Duration::ZERO;
    let store = DurableBackend::open_with(dir.path(), options.clone()).unwrap();
    store.create_table("t1x").unwrap();
    store.create_table("t2x").unwrap();
    for i in 0..20 {
        store.write("t1x", insert(&format!("r{i:02}"), i)).unwrap();
        store.write("t2x", insert(&format!("r{i:02}"), i)).unwrap();
    }
    store.gate.with_writer(|w| w.flush()).unwrap();
    // Every row replaced: the next flush rewrites each of the 10 blocks of t1x.
    for i in 0..20 {
        let mut e = Entity::new("p", format!("r{i:02}"));
        e.set("V", Value::Int32(-i));
        let op = WriteOp::InsertOrReplace { entity: e };
        store.write("t1x", op.clone()).unwrap();
        store.write("t2x", op).unwrap();
    }
    // One slice: one block of t1x (the first table) folded, the flush in progress.
    store.gate.with_writer(|w| w.slice()).unwrap();
    assert!(store.gate.with_writer(|w| w.flushing.is_some()));
    store.delete_table("t1x").unwrap();
    store.create_table("t1x").unwrap();
    store.write("t2x", insert("r99", 99)).unwrap();
    // The slices go on (the background thread's, or these) until the flush ends.
    while store.gate.with_writer(|w| w.flushing.is_some()) {
        store.gate.with_writer(|w| w.slice()).unwrap();
    }
    assert!(all_entities(&store, "t1x").is_empty());
    let t2: Vec<String> = all_entities(&store, "t2x")
        .iter()
        .map(|e| e.row_key().to_owned())
        .collect();
    assert_eq!(t2.len(), 21);
    assert_eq!(t2.last().map(String::as_str), Some("r99"));
    store.close().unwrap();
    let tables = stored_block_tables(dir.path());
    assert!(!tables.is_empty());
    assert!(
        tables.iter().all(|&id| id == 2),
        "blocks of tables {tables:?}: only t2x (id 2) has rows"
    );
    let store = DurableBackend::open_with(dir.path(), options).unwrap();
    assert!(all_entities(&store, "t1x").is_empty());
    assert_eq!(all_entities(&store, "t2x").len(), 21);
}

/// Writers that never stop while flushes run in slices: every write is read back as it
/// was acknowledged at once, from another thread too, and nothing is lost across the
/// flushes and a reopen — while the flushes did run in many slices, with writes committed
/// between them.
#[test]
fn writes_go_on_between_the_slices_of_a_flush() {
    let dir = tempfile::tempdir().unwrap();
    let options = DurableOptions::default()
        .with_cache_bytes(8 << 20)
        .with_block_limits(4, 1 << 20)
        .with_memtable_bytes(16 << 10)
        .with_flush_interval(Duration::from_millis(50));
    let mut options = options;
    options.flush_slice = Duration::from_micros(200);
    let store = Arc::new(DurableBackend::open_with(dir.path(), options.clone()).unwrap());
    store.create_table("t1x").unwrap();
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                // Keys spread over the table, so that flushes rewrite many blocks.
                let mut x: u64 = 0x9E37_79B9 + w;
                for i in 0..1500i32 {
                    x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    let rk = format!("{:05}-{w}", (x >> 33) % 100_000);
                    let mut e = Entity::new("p", &rk);
                    e.set("V", Value::Int32(i));
                    store
                        .write("t1x", WriteOp::InsertOrReplace { entity: e })
                        .unwrap();
                    let got = store.get("t1x", "p", &rk).unwrap().unwrap();
                    assert_eq!(got.custom("V"), Some(&Value::Int32(i)), "{rk}");
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }
    let stats = store.write_log_stats();
    let written = all_entities(&store, "t1x");
    assert!(written.len() > 2000, "{} entities", written.len());
    assert!(stats.flushes >= 2, "{stats:?}");
    assert!(stats.flush_slices > 2 * stats.flushes, "{stats:?}");
    let store = Arc::into_inner(store).unwrap();
    store.close().unwrap();
    let store = DurableBackend::open_with(dir.path(), options).unwrap();
    assert_eq!(all_entities(&store, "t1x"), written);
}

/// Commits `op` to table t1x by the writer `w` itself (the test holds the writer: no
/// other thread can go on with a flush meanwhile).
pub(super) fn commit_by(w: &mut writer::Writer, op: WriteOp) {
    let (reply, answer) = oneshot::channel();
    w.commit(vec![writer::Request::Write {
        table: "t1x".into(),
        ops: crate::check_ops(vec![op]),
        reply,
    }]);
    answer.recv().unwrap().unwrap();
}

/// `kill -9` in the middle of a flush (some slices committed, non-durably; rows written
/// between them and after) loses nothing: the data file rolls back to its checkpoint or
/// keeps the slices, and either way the log replays every row written since.
#[test]
fn a_crash_in_the_middle_of_a_flush_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let options = keep_log(FsyncPolicy::default())
        .with_block_limits(2, 1 << 20)
        .with_memtable_bytes(usize::MAX)
        .with_flush_slice(Duration::ZERO);
    let store = DurableBackend::open_with(dir.path(), options).unwrap();
    store.create_table("t1x").unwrap();
    let rk = |i: i32| format!("r{i:02}");
    for i in 0..20 {
        store.write("t1x", insert(&rk(i), i)).unwrap();
    }
    store.gate.with_writer(|w| w.checkpoint()).unwrap();
    let put = |i: i32, v: i32| {
        let mut e = Entity::new("p", rk(i));
        e.set("V", Value::Int32(v));
        WriteOp::InsertOrReplace { entity: e }
    };
    // Every row replaced and ten added, then two slices of their flush (a block each) with
    // a write between them and one after, all while the test holds the writer.
    let (durable, log) = store.gate.with_writer(|w| {
        for i in 0..30 {
            commit_by(w, put(i, 100 + i));
        }
        w.slice().unwrap();
        commit_by(w, put(3, 1000));
        w.slice().unwrap();
        commit_by(w, put(25, 2500));
        assert!(w.flushing.is_some());
        (
            std::fs::read(dir.path().join(DATA_FILE)).unwrap(),
            std::fs::read(dir.path().join(WAL_FILE)).unwrap(),
        )
    });
    store.close().unwrap();

    let (_dir, store) = open_files(&durable, &log).unwrap();
    let keys: Vec<String> = (0..30).map(rk).collect();
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let want: Vec<Option<i32>> = (0..30)
        .map(|i| match i {
            3 => Some(1000),
            25 => Some(2500),
            _ => Some(100 + i),
        })
        .collect();
    assert_eq!(values(&store, &keys), want);
}

/// A checkpoint due by time is made even when the memtable bound is tiny: with nothing in
/// the memtables it folds nothing and empties the log (it used to begin an empty flush
/// instead, tick after tick, and the log was never emptied).
#[test]
fn a_checkpoint_due_by_time_empties_the_log_under_a_tiny_memtable_bound() {
    let dir = tempfile::tempdir().unwrap();
    let options = DurableOptions::default()
        .with_cache_bytes(8 << 20)
        .with_memtable_bytes(1)
        .with_flush_interval(Duration::from_millis(10))
        .with_checkpoints(u64::MAX / 4, Duration::from_millis(50));
    let store = DurableBackend::open_with(dir.path(), options).unwrap();
    store.create_table("t1x").unwrap();
    store.write("t1x", insert("r1", 1)).unwrap();
    eventually("a checkpoint after the flush", || {
        let stats = store.write_log_stats();
        stats.checkpoints >= 1 && stats.log_bytes <= HEADER_LEN
    });
    assert_eq!(values(&store, &["r1"]), [Some(1)]);
}
