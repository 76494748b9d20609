//! Reading by meaning (issue 26): logs keyed by epoch, names from frameworks the readers were
//! not written for, a loss logged in parts, train and validation event folders with the same
//! tags, text files classified by content, a run config named `args.yaml`.

use std::path::Path;

use mltriage_probes::facts::facts_from_artifacts;
use mltriage_probes::metrics::tfevents::encode;
use mltriage_probes::metrics::Unit;
use mltriage_probes::run::{ArtifactKind, Run};

fn write(p: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, bytes).unwrap();
}

fn events(tag: &[u8], points: &[(i64, f64)]) -> Vec<u8> {
    let mut out = Vec::new();
    encode::record(&mut out, &encode::file_version_event(0.0));
    for &(s, v) in points {
        encode::record(
            &mut out,
            &encode::scalar_event(s, s as f64, tag, v, encode::Style::SimpleValue),
        );
    }
    out
}

#[test]
fn an_epoch_keyed_detection_csv_is_read_with_its_loss_summed_from_parts() {
    let d = tempfile::tempdir().unwrap();
    // Ultralytics' results.csv: padded headers, `epoch` the only index, a loss in three parts.
    let csv = "                  epoch,         train/box_loss,         train/cls_loss,         train/dfl_loss,   metrics/precision(B),      metrics/recall(B),       metrics/mAP50(B),    metrics/mAP50-95(B),           val/box_loss,           val/cls_loss,           val/dfl_loss,                 lr/pg0,                 lr/pg1,                 lr/pg2\n\
                  1,    3.0,    4.0,    1.5,   0.01,   0.02,  0.005,  0.001,   2.9,   3.9,   1.4,  0.07, 0.0003, 0.0003\n\
                  2,    2.5,    3.0,    1.4,   0.05,   0.10,  0.050,  0.020,   2.6,   3.1,   1.3,  0.04, 0.0006, 0.0006\n\
                  3,    2.0,    2.0,    1.3,   0.20,   0.30,  0.200,  0.090,   2.2,   2.3,   1.2,  0.01, 0.0009, 0.0009\n";
    write(&d.path().join("train/results.csv"), csv.as_bytes());
    write(
        &d.path().join("train/args.yaml"),
        b"task: detect\nmode: train\nepochs: 3\nbatch: 16\nlr0: 0.01\noptimizer: SGD\n",
    );
    let run = Run::discover(d.path()).unwrap();
    let m = run.metrics();
    assert!(run.problems().is_empty(), "{:?}", run.problems());
    let loss = m.get("loss").expect("loss summed from its parts");
    assert_eq!(loss.steps(), vec![1, 2, 3]);
    assert!((loss.values()[0] - 8.5).abs() < 1e-9);
    assert_eq!(loss.unit, Unit::Epoch);
    let eval = m.get("eval_loss").expect("eval loss summed from its parts");
    assert!((eval.values()[2] - 5.7).abs() < 1e-9);
    assert_eq!(m.get("eval_map50").map(|s| s.len()), Some(3));
    assert_eq!(m.get("eval_map").map(|s| s.len()), Some(3));
    assert!(m.get("learning_rate/pg0").is_some() && m.get("learning_rate").is_some());
    let facts = facts_from_artifacts(&run);
    assert_eq!(facts.f64("lr_max"), Some(0.01));
    assert_eq!(facts.f64("epochs"), Some(3.0));
}

#[test]
fn a_csv_without_log_in_its_name_is_read_when_its_columns_are_training_signals() {
    let d = tempfile::tempdir().unwrap();
    // timm's summary.csv: epoch, train_loss, eval_loss, eval_top1, eval_top5, lr.
    write(
        &d.path().join("summary.csv"),
        b"epoch,train_loss,eval_loss,eval_top1,eval_top5,lr\n0,2.2,2.1,20.0,60.0,0.001\n1,1.9,1.8,35.0,80.0,0.0009\n",
    );
    // A data table is not a log.
    write(
        &d.path().join("labels.csv"),
        b"file,label\na.png,1\nb.png,2\n",
    );
    let run = Run::discover(d.path()).unwrap();
    let m = run.metrics();
    assert_eq!(
        m.get("loss").map(|s| (s.len(), s.unit)),
        Some((2, Unit::Epoch))
    );
    assert!(m.get("eval_accuracy").is_some());
    assert!(m.get("label").is_none());
}

#[test]
fn keras_train_and_validation_event_folders_are_two_series() {
    let d = tempfile::tempdir().unwrap();
    let pts = |base: f64| {
        (0..5)
            .map(|e| (e, base - 0.1 * e as f64))
            .collect::<Vec<_>>()
    };
    write(
        &d.path().join("logs/train/events.out.tfevents.1.host.1.v2"),
        &events(b"epoch_loss", &pts(2.0)),
    );
    write(
        &d.path()
            .join("logs/validation/events.out.tfevents.1.host.2.v2"),
        &events(b"epoch_loss", &pts(3.0)),
    );
    let run = Run::discover(d.path()).unwrap();
    let m = run.metrics();
    let train = m.get("loss").unwrap();
    let val = m.get("eval_loss").unwrap();
    assert_eq!((train.values()[0], val.values()[0]), (2.0, 3.0));
    assert_eq!((train.unit, val.unit), (Unit::Epoch, Unit::Epoch));
}

#[test]
fn json_lines_in_a_txt_file_keyed_by_epoch() {
    let d = tempfile::tempdir().unwrap();
    // DETR-style log.txt: one JSON object per epoch, no step key.
    write(
        &d.path().join("log.txt"),
        b"{\"train_lr\": 0.0001, \"train_loss\": 5.1, \"test_loss\": 4.9, \"epoch\": 0}\n{\"train_lr\": 0.0001, \"train_loss\": 4.2, \"test_loss\": 4.3, \"epoch\": 1}\n",
    );
    let run = Run::discover(d.path()).unwrap();
    assert_eq!(run.artifacts[0].kind, ArtifactKind::Jsonl);
    let loss = run.metrics().get("loss").unwrap();
    assert_eq!((loss.steps(), loss.unit), (vec![0, 1], Unit::Epoch));
}

#[test]
fn tensorboard_copies_of_epoch_keyed_csv_values_count_epochs() {
    let d = tempfile::tempdir().unwrap();
    write(
        &d.path().join("results.csv"),
        b"epoch,train/box_loss,train/cls_loss\n1,3.0,4.0\n2,2.0,3.0\n3,1.5,2.5\n",
    );
    // The same values written to TensorBoard at step = epoch - 1.
    write(
        &d.path().join("events.out.tfevents.1.host.1.0"),
        &events(b"train/box_loss", &[(0, 3.0), (1, 2.0), (2, 1.5)]),
    );
    let run = Run::discover(d.path()).unwrap();
    for s in run.metrics().all("loss/box") {
        assert_eq!(s.unit, Unit::Epoch, "{}", s.source.display());
    }
}
