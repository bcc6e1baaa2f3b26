//! A full disk, on a small file system this test mounts (a 20 MiB tmpfs; as root, as CI
//! runs): writes are refused with `WritesRefused` (503 `ServerBusy`) naming the full disk
//! while reads go on and `ready()` reports the cause; they resume by themselves once space
//! is freed; nothing acknowledged is lost across a restart. A data directory opened on the
//! full disk fails with a clear error and leaves nothing that a later start refuses.
//!
//! Where mounting is not permitted the test prints `SKIPPED: <reason>` and passes. Every
//! wait is bounded (a few seconds).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use tableq_model::{Entity, Value};
use tableq_store::{Backend, DurableBackend, DurableOptions, FsyncPolicy, StoreError, WriteOp};

/// A tmpfs mounted for the test, unmounted when dropped.
struct Tmpfs {
    path: PathBuf,
    _dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Result<Tmpfs, String> {
        let dir = tempfile::tempdir().map_err(|e| format!("no temporary directory: {e}"))?;
        let path = dir.path().join("mnt");
        std::fs::create_dir(&path).map_err(|e| format!("cannot create the mount point: {e}"))?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&path)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "mounting a tmpfs is not permitted here: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(Tmpfs { path, _dir: dir })
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.path).status();
    }
}

/// Fills the file system holding `dir` with `filler`, then frees `leave` bytes of it.
fn fill(filler: &Path, leave: u64) {
    let mut f = std::fs::File::create(filler).expect("filler");
    let block = vec![0x5Au8; 1 << 20];
    while f.write_all(&block).is_ok() {}
    // A partial last block may have been written: the length is what is on disk.
    let len = f.metadata().expect("filler length").len();
    f.set_len(len.saturating_sub(leave))
        .expect("free some space");
}

fn entity(i: usize) -> Entity {
    let mut e = Entity::new("p", format!("r{i:06}"));
    e.set("N", Value::Int32(i as i32));
    e.set("Pad", Value::String("x".repeat(2000)));
    e
}

fn options() -> DurableOptions {
    DurableOptions::default()
        .with_cache_bytes(4 << 20)
        .with_fsync(FsyncPolicy::Interval(Duration::from_millis(50)))
}

fn within(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_full_disk_refuses_writes_keeps_reads_and_recovers_by_itself() {
    let fs = match Tmpfs::mount("20m") {
        Ok(fs) => fs,
        Err(reason) => {
            println!("SKIPPED: {reason}");
            return;
        }
    };
    let data = fs.path.join("data");
    let store = DurableBackend::open_with(&data, options()).expect("open on the tmpfs");
    store.create_table("full").expect("create table");
    let filler = fs.path.join("filler");
    fill(&filler, 3 << 20);

    // Insert until the disk is full.
    let mut acknowledged = Vec::new();
    let refused = loop {
        let i = acknowledged.len();
        assert!(i < 20_000, "the disk never filled up");
        match store.write("full", WriteOp::Insert { entity: entity(i) }) {
            Ok(_) => acknowledged.push(i),
            Err(e) => break e,
        }
    };
    assert!(!acknowledged.is_empty());
    assert!(matches!(refused, StoreError::WritesRefused(_)), "{refused}");
    assert_eq!(refused.code(), tableq_model::ErrorCode::ServerBusy);
    assert!(refused.to_string().contains("full"), "{refused}");
    let not_ready = store.ready().expect_err("not ready while the disk is full");
    assert!(not_ready.to_string().contains("full"), "{not_ready}");
    // Reads go on.
    let last = *acknowledged.last().unwrap_or(&0);
    let got = store
        .get("full", "p", &format!("r{last:06}"))
        .expect("a read");
    assert!(got.is_some());
    assert!(store.tables().is_ok());
    // Another write is still refused, quickly.
    let started = Instant::now();
    assert!(
        store
            .write(
                "full",
                WriteOp::Insert {
                    entity: entity(999_999)
                }
            )
            .is_err()
    );
    assert!(started.elapsed() < Duration::from_secs(2));

    // A new data directory on the full disk: a clear error, nothing left behind that a
    // later start would refuse.
    let other = fs.path.join("other");
    let err = DurableBackend::open_with(&other, options()).expect_err("no room for a data file");
    let message = err.to_string();
    assert!(
        message.contains("space") || message.contains("full"),
        "{message}"
    );

    // Space is back: writes resume by themselves.
    std::fs::remove_file(&filler).expect("free the disk");
    within(Duration::from_secs(5), "readiness", || {
        store.ready().is_ok()
    });
    for i in acknowledged.len()..acknowledged.len() + 20 {
        store
            .write("full", WriteOp::Insert { entity: entity(i) })
            .expect("writes resume");
        acknowledged.push(i);
    }
    // The data directory that could not be created opens now.
    let second =
        DurableBackend::open_with(&other, options()).expect("a start after the disk was freed");
    second.close().expect("close");

    // Nothing acknowledged was lost.
    store.close().expect("close");
    let store = DurableBackend::open_with(&data, options()).expect("reopen");
    for i in &acknowledged {
        let e = store
            .get("full", "p", &format!("r{i:06}"))
            .expect("read")
            .unwrap_or_else(|| panic!("acknowledged entity r{i:06} lost"));
        assert_eq!(e.custom("N"), Some(&Value::Int32(*i as i32)));
    }
    store.close().expect("close");
}
