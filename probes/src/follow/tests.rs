//! Offsets, half-written tails, truncation and rewrites of the followed readers.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use super::tail::Tail;
use super::Follower;
use crate::metrics::tfevents::encode::{file_version_event, record, scalar_event, Style};
use crate::run::ArtifactKind;

fn append(path: &Path, bytes: &[u8]) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    f.write_all(bytes).unwrap();
}

fn event(step: i64, tag: &[u8], value: f64) -> Vec<u8> {
    let mut out = Vec::new();
    record(
        &mut out,
        &scalar_event(step, 1.0e9 + step as f64, tag, value, Style::SimpleValue),
    );
    out
}

fn values(t: &Tail, tag: &str) -> Vec<(u64, f64)> {
    let fs = t.series().unwrap().unwrap();
    fs.series
        .iter()
        .find(|s| s.tag == tag)
        .map(|s| s.points.iter().map(|p| (p.step, p.value)).collect())
        .unwrap_or_default()
}

#[test]
fn event_file_half_written_record_waits_for_its_rest() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("events.out.tfevents.1.host");
    let mut head = Vec::new();
    record(&mut head, &file_version_event(1.0e9));
    append(&p, &head);
    append(&p, &event(1, b"loss", 2.0));
    let mut t = Tail::new(&p, ArtifactKind::TfEvents).unwrap();
    assert_eq!(t.poll().points, 1);
    let whole = std::fs::metadata(&p).unwrap().len();
    assert_eq!(t.offset(), whole);
    // Half a record: its header and part of its data.
    let next = event(2, b"loss", 3.0);
    let (a, b) = next.split_at(next.len() / 2);
    append(&p, a);
    assert_eq!(t.poll().points, 0);
    assert_eq!(t.offset(), whole, "the offset stays before the half record");
    assert_eq!(values(&t, "loss"), vec![(1, 2.0)]);
    // Only the last CRC byte missing: still not read.
    append(&p, &b[..b.len() - 1]);
    assert_eq!(t.poll().points, 0);
    append(&p, &b[b.len() - 1..]);
    assert_eq!(t.poll().points, 1);
    assert_eq!(values(&t, "loss"), vec![(1, 2.0), (2, 3.0)]);
}

#[test]
fn event_file_truncated_is_read_again_from_its_start() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("events.out.tfevents.1.host");
    for s in 0..5 {
        append(&p, &event(s, b"loss", s as f64));
    }
    let mut t = Tail::new(&p, ArtifactKind::TfEvents).unwrap();
    assert_eq!(t.poll().points, 5);
    std::fs::write(&p, event(7, b"loss", 9.0)).unwrap();
    let u = t.poll();
    assert!(u.reset);
    assert_eq!(values(&t, "loss"), vec![(7, 9.0)]);
}

/// A poll that appends steps the series already holds (a resumed run writing on into the same
/// log) hands the series out sorted, one point per step, the later write kept; one that climbs on
/// hands it out as written.
#[test]
fn a_later_poll_that_goes_back_in_step_is_handed_out_sorted() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("events.out.tfevents.1.host");
    for s in [1, 2, 3] {
        append(&p, &event(s, b"loss", s as f64));
    }
    let mut t = Tail::new(&p, ArtifactKind::TfEvents).unwrap();
    t.poll();
    append(&p, &event(4, b"loss", 4.0));
    t.poll();
    assert_eq!(
        values(&t, "loss"),
        vec![(1, 1.0), (2, 2.0), (3, 3.0), (4, 4.0)]
    );
    append(&p, &event(2, b"loss", 20.0));
    append(&p, &event(5, b"loss", 50.0));
    t.poll();
    assert_eq!(
        values(&t, "loss"),
        vec![(1, 1.0), (2, 20.0), (3, 3.0), (4, 4.0), (5, 50.0)]
    );

    let c = d.path().join("metrics.csv");
    append(&c, b"step,train_loss\n1,1.0\n2,2.0\n");
    let mut t = Tail::new(&c, ArtifactKind::MetricsCsv).unwrap();
    t.poll();
    append(&c, b"3,3.0\n");
    t.poll();
    assert_eq!(values(&t, "train_loss"), vec![(1, 1.0), (2, 2.0), (3, 3.0)]);
    append(&c, b"1,10.0\n4,4.0\n");
    t.poll();
    assert_eq!(
        values(&t, "train_loss"),
        vec![(1, 10.0), (2, 2.0), (3, 3.0), (4, 4.0)]
    );
}

#[test]
fn csv_line_without_its_newline_is_not_read_until_complete() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("metrics.csv");
    append(&p, b"step,train_loss,lr\n1,2.5,0.1\n");
    let mut t = Tail::new(&p, ArtifactKind::MetricsCsv).unwrap();
    assert_eq!(t.poll().points, 2);
    // `2,1` would read as loss 1 (a false drop) if taken before the rest arrives.
    append(&p, b"2,1");
    assert_eq!(t.poll().points, 0);
    assert_eq!(values(&t, "train_loss"), vec![(1, 2.5)]);
    append(&p, b"9.5,0.1\n3,2.4,0.1\n");
    assert_eq!(t.poll().points, 4);
    assert_eq!(
        values(&t, "train_loss"),
        vec![(1, 2.5), (2, 19.5), (3, 2.4)]
    );
}

#[test]
fn csv_rewritten_with_a_new_header_is_read_again() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("metrics.csv");
    append(&p, b"step,loss\n1,2.0\n2,1.9\n");
    let mut t = Tail::new(&p, ArtifactKind::MetricsCsv).unwrap();
    t.poll();
    // Lightning rewrites the whole file when a new column appears: longer, same inode.
    std::fs::write(
        &p,
        b"step,loss,val_loss\n1,2.0,\n2,1.9,\n3,1.8,2.1\n4,1.7,\n",
    )
    .unwrap();
    let u = t.poll();
    assert!(u.reset);
    assert_eq!(values(&t, "loss").len(), 4);
    assert_eq!(values(&t, "val_loss"), vec![(3, 2.1)]);
}

#[test]
fn csv_without_a_step_column_keeps_counting_rows_across_reads() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("metrics.csv");
    append(&p, b"loss\n3.0\n2.0\n");
    let mut t = Tail::new(&p, ArtifactKind::MetricsCsv).unwrap();
    t.poll();
    append(&p, b"1.0\n");
    t.poll();
    assert_eq!(values(&t, "loss"), vec![(0, 3.0), (1, 2.0), (2, 1.0)]);
}

#[test]
fn jsonl_half_line_waits_and_truncation_resets() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("metrics.jsonl");
    append(&p, b"{\"step\": 1, \"loss\": 2.0}\n{\"step\": 2, \"lo");
    let mut t = Tail::new(&p, ArtifactKind::Jsonl).unwrap();
    assert_eq!(t.poll().points, 1);
    append(&p, b"ss\": 1.5}\n");
    assert_eq!(t.poll().points, 1);
    assert_eq!(values(&t, "loss"), vec![(1, 2.0), (2, 1.5)]);
    std::fs::write(&p, b"{\"step\": 1, \"loss\": 4.0}\n").unwrap();
    assert!(t.poll().reset);
    assert_eq!(values(&t, "loss"), vec![(1, 4.0)]);
}

#[test]
fn stdout_log_with_progress_bars_reads_finished_lines_only() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("train.log");
    append(
        &p,
        b"starting\nstep 1 loss 2.50\n 10%|#  | 1/10\r 20%|## | 2/10\r",
    );
    let mut t = Tail::new(&p, ArtifactKind::StdoutLog).unwrap();
    t.poll();
    assert_eq!(values(&t, "loss"), vec![(1, 2.5)]);
    append(&p, b"step 2 loss 1");
    t.poll();
    assert_eq!(
        values(&t, "loss"),
        vec![(1, 2.5)],
        "`loss 1` is half of `loss 1.25`"
    );
    append(&p, b".25\n");
    t.poll();
    assert_eq!(values(&t, "loss"), vec![(1, 2.5), (2, 1.25)]);
}

#[test]
fn trainer_state_half_rewritten_keeps_the_last_good_read() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("trainer_state.json");
    let good = br#"{"global_step": 2, "log_history": [{"step": 1, "loss": 2.0}, {"step": 2, "loss": 1.9}]}"#;
    std::fs::write(&p, good).unwrap();
    let mut t = Tail::new(&p, ArtifactKind::TrainerState).unwrap();
    t.poll();
    assert_eq!(values(&t, "loss").len(), 2);
    std::fs::write(&p, &good[..40]).unwrap();
    t.poll();
    assert_eq!(
        values(&t, "loss").len(),
        2,
        "the half-written rewrite is not taken"
    );
    assert!(t.error.is_none());
    let newer = br#"{"global_step": 3, "log_history": [{"step": 1, "loss": 2.0}, {"step": 2, "loss": 1.9}, {"step": 3, "loss": 1.8}]}"#;
    std::fs::write(&p, newer).unwrap();
    t.poll();
    assert_eq!(values(&t, "loss").len(), 3);
}

#[test]
fn follower_picks_up_a_new_event_file_and_waits_for_a_checkpoint_to_settle() {
    let d = tempfile::tempdir().unwrap();
    let logs = d.path().join("runs");
    std::fs::create_dir(&logs).unwrap();
    let e1 = logs.join("events.out.tfevents.100.host");
    for s in 1..=3 {
        append(&e1, &event(s, b"train/loss", 2.0));
    }
    let mut f = Follower::new(d.path(), Duration::from_secs(3600)).unwrap();
    let r = f.poll().unwrap();
    assert_eq!(r.new_points, 3);
    assert_eq!(f.last_step(), Some(3));
    // A restart: a second event file in the same folder.
    let e2 = logs.join("events.out.tfevents.200.host");
    append(&e2, &event(4, b"train/loss", 1.9));
    let r = f.poll().unwrap();
    assert_eq!(r.new_points, 1);
    assert!(r.new_files.contains(&e2));
    assert_eq!(f.last_step(), Some(4));
    // A checkpoint being written: not complete until its files stay unchanged two polls.
    let ck = d.path().join("checkpoint-4");
    std::fs::create_dir(&ck).unwrap();
    std::fs::write(ck.join("model.safetensors"), b"partial").unwrap();
    let r = f.poll().unwrap();
    assert!(!r.checkpoints_changed);
    assert_eq!(f.complete_checkpoints(), 0);
    f.poll().unwrap();
    let r = f.poll().unwrap();
    assert!(r.checkpoints_changed);
    assert_eq!(f.complete_checkpoints(), 1);
    let run = f.run().unwrap();
    let loss = run.metrics().get("loss").expect("merged loss");
    assert_eq!(loss.len(), 4);
}

#[test]
fn sharded_checkpoint_is_incomplete_until_every_indexed_shard_exists() {
    let d = tempfile::tempdir().unwrap();
    let ck = d.path().join("checkpoint-10");
    std::fs::create_dir(&ck).unwrap();
    std::fs::write(
        ck.join("model.safetensors.index.json"),
        br#"{"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}"#,
    )
    .unwrap();
    std::fs::write(ck.join("model-00001-of-00002.safetensors"), b"x").unwrap();
    let mut f = Follower::new(d.path(), Duration::from_secs(3600)).unwrap();
    for _ in 0..3 {
        f.poll().unwrap();
    }
    assert_eq!(f.complete_checkpoints(), 0);
    std::fs::write(ck.join("model-00002-of-00002.safetensors"), b"y").unwrap();
    for _ in 0..3 {
        f.poll().unwrap();
    }
    assert_eq!(f.complete_checkpoints(), 1);
}

#[test]
fn a_missing_run_is_an_error_naming_it() {
    let e = Follower::new(Path::new("/no/such/run"), Duration::from_secs(1)).unwrap_err();
    assert!(e.to_string().contains("/no/such/run"));
}
