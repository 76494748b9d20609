//! Metric readers against the real fixture runs (values cross-checked with tbparse and the
//! JSON files), plus bad-input files whose errors must name the file.

use std::path::{Path, PathBuf};

use mltriage_probes::metrics::tfevents::{self, encode};
use mltriage_probes::metrics::trainer_state::TrainerState;
use mltriage_probes::metrics::{read_metrics_file, Series};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/fixtures");

fn fixture(rel: &str) -> PathBuf {
    Path::new(FIXTURES).join(rel)
}

/// The one event file under `<run>/runs/`.
fn events_of(run: &str) -> PathBuf {
    let mut stack = vec![fixture(run).join("runs")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("events.out.tfevents")
            {
                return p;
            }
        }
    }
    panic!("no event file in {run}");
}

fn by_tag<'a>(s: &'a [Series], tag: &str) -> &'a Series {
    s.iter()
        .find(|s| s.tag == tag)
        .unwrap_or_else(|| panic!("no tag {tag}"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * b.abs().max(1e-12)
}

#[test]
fn lm_healthy_tb_matches_tbparse() {
    let s = read_metrics_file(&events_of("lm_healthy_tb")).unwrap();
    let loss = by_tag(&s, "train/loss");
    assert_eq!(loss.name, "loss");
    assert_eq!(loss.len(), 300);
    assert_eq!(
        (loss.first().unwrap().step, loss.last().unwrap().step),
        (1, 300)
    );
    assert!(close(loss.first().unwrap().value, 6.264094829559326));
    assert!(close(loss.last().unwrap().value, 3.064255475997925));
    assert!(loss.first().unwrap().wall_time.is_some());
    let eval = by_tag(&s, "eval/loss");
    assert_eq!(eval.name, "eval_loss");
    assert_eq!(eval.steps(), vec![50, 100, 150, 200, 250, 300]);
    assert!(close(eval.first().unwrap().value, 5.656802654266357));
    let lr = by_tag(&s, "train/learning_rate");
    assert_eq!(lr.name, "learning_rate");
    assert!(close(lr.first().unwrap().value, 3.333333370392211e-05));
    assert!(close(
        by_tag(&s, "train/grad_norm").first().unwrap().value,
        1.1639680862426758
    ));
}

#[test]
fn hf_healthy_events_match_tbparse() {
    let s = read_metrics_file(&events_of("hf_healthy")).unwrap();
    let lr = by_tag(&s, "train/learning_rate");
    assert_eq!(lr.len(), 300);
    assert_eq!(lr.values()[0], 0.0);
    assert!(close(lr.values()[1], 3.3333333e-05));
    // tbparse reports 307 epoch rows (eval rows repeat steps); one point per step here.
    assert_eq!(by_tag(&s, "train/epoch").len(), 300);
    assert_eq!(by_tag(&s, "eval/loss").len(), 6);
    assert!(close(
        by_tag(&s, "eval/loss").first().unwrap().value,
        5.486680507659912
    ));
    let mean = by_tag(&s, "train/train_loss");
    assert_eq!(
        mean.name, "train/train_loss",
        "the run's mean loss is not the loss series"
    );
    assert!(close(mean.first().unwrap().value, 4.053888320922852));
}

#[test]
fn other_fixture_runs_match_tbparse() {
    let cases = [
        (
            "lm_bad_init",
            "train/loss",
            300,
            28.695878982543945,
            13.687172889709473,
        ),
        (
            "lm_sched_never_stepped",
            "train/learning_rate",
            300,
            3.333333370392211e-05,
            3.333333370392211e-05,
        ),
        (
            "lm_no_decay_split",
            "train/grad_norm",
            300,
            1.1831269264221191,
            0.9875759482383728,
        ),
        (
            "vision_healthy",
            "train/loss",
            200,
            2.311882734298706,
            0.05617794394493103,
        ),
        (
            "vision_frozen_in_optimizer",
            "train/grad_norm",
            200,
            1.429161787033081,
            0.30766361951828003,
        ),
    ];
    for (run, tag, n, first, last) in cases {
        let s = read_metrics_file(&events_of(run)).unwrap();
        let t = by_tag(&s, tag);
        assert_eq!(t.len(), n, "{run}");
        assert!(close(t.first().unwrap().value, first), "{run}");
        assert!(close(t.last().unwrap().value, last), "{run}");
    }
}

#[test]
fn hf_trainer_state_matches_the_json() {
    let st = TrainerState::read(&fixture("hf_healthy/checkpoint-300/trainer_state.json")).unwrap();
    assert_eq!(
        (
            st.global_step,
            st.max_steps,
            st.logging_steps,
            st.eval_steps
        ),
        (Some(300), Some(300), Some(1), Some(50))
    );
    assert_eq!(
        (st.train_batch_size, st.num_train_epochs, st.best_metric),
        (Some(8), Some(1.0), None)
    );
    let loss = st.series("loss").unwrap();
    assert_eq!(loss.len(), 300);
    assert_eq!(loss.first().unwrap().value, 6.050521373748779);
    assert_eq!(loss.last().unwrap().value, 2.9777064323425293);
    let lr = st.series("learning_rate").unwrap();
    assert_eq!(lr.values()[..2], [0.0, 3.3333333333333335e-05]);
    assert_eq!(
        st.series("grad_norm").unwrap().first().unwrap().value,
        1.1322698593139648
    );
    let eval = st.series("eval_loss").unwrap();
    assert_eq!(eval.steps(), vec![50, 100, 150, 200, 250, 300]);
    assert_eq!(eval.last().unwrap().value, 2.9540226459503174);
    assert_eq!(st.series("epoch").unwrap().len(), 300);
    let half =
        TrainerState::read(&fixture("hf_healthy/checkpoint-150/trainer_state.json")).unwrap();
    assert_eq!(half.global_step, Some(150));
}

fn tmp_file(name: &[u8], bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    #[cfg(unix)]
    let name = {
        use std::os::unix::ffi::OsStrExt;
        std::ffi::OsStr::from_bytes(name).to_os_string()
    };
    #[cfg(not(unix))]
    let name = std::ffi::OsString::from(String::from_utf8_lossy(name).into_owned());
    let p = d.path().join(name);
    std::fs::write(&p, bytes).unwrap();
    (d, p)
}

fn events(n: i64, style: encode::Style) -> Vec<u8> {
    let mut out = Vec::new();
    encode::record(&mut out, &encode::file_version_event(0.0));
    for i in 0..n {
        encode::record(
            &mut out,
            &encode::scalar_event(i, i as f64, b"loss", i as f64, style),
        );
    }
    out
}

#[test]
fn bad_event_files_name_the_file() {
    // Bad CRC mid-file.
    let mut bytes = events(10, encode::Style::SimpleValue);
    let n = bytes.len();
    bytes[n / 2] ^= 0x55;
    let (_d, p) = tmp_file(b"events.out.tfevents.1.bad", &bytes);
    let e = read_metrics_file(&p).unwrap_err().to_string();
    assert!(
        e.starts_with(&p.display().to_string()) && e.contains("byte "),
        "{e}"
    );
    // 2^63 length as the last record: a truncated tail, the rest is read.
    let mut bytes = events(5, encode::Style::TensorFloatVal);
    let len = (1u64 << 63).to_le_bytes();
    bytes.extend_from_slice(&len);
    bytes.extend_from_slice(&tfevents::masked_crc(&len).to_le_bytes());
    let (_d, p) = tmp_file(b"events.out.tfevents.2.huge", &bytes);
    let f = tfevents::read_events(&p).unwrap();
    assert_eq!(f.series[0].len(), 5);
    assert!(f.tail.is_some());
    // Half-written last record.
    let bytes = events(5, encode::Style::TensorContentF64);
    let (_d, p) = tmp_file(b"events.out.tfevents.3.cut", &bytes[..bytes.len() - 7]);
    assert_eq!(read_metrics_file(&p).unwrap()[0].len(), 4);
}

#[test]
fn bad_text_logs_name_the_file_and_line() {
    let (_d, p) = tmp_file(b"metrics.csv", b"step,loss\n1,2\n2,3,4\n");
    let e = read_metrics_file(&p).unwrap_err().to_string();
    assert!(
        e.starts_with(&p.display().to_string()) && e.contains("line 3"),
        "{e}"
    );
    let (_d, p) = tmp_file(
        b"log.jsonl",
        b"{\"step\":1,\"loss\":NaN}\n[1]\n{oops}\n{\"step\":2,\"loss\":1}\n",
    );
    let e = read_metrics_file(&p).unwrap_err().to_string();
    assert!(
        e.starts_with(&p.display().to_string()) && e.contains("line 3"),
        "{e}"
    );
    let (_d, p) = tmp_file(
        b"trainer_state.json",
        b"{\"log_history\": [{\"loss\": NaN, \"step\": 1}",
    );
    let e = read_metrics_file(&p).unwrap_err().to_string();
    assert!(e.starts_with(&p.display().to_string()), "{e}");
    let (_d, p) = tmp_file(b"mystery.dat", b"\x00\x01garbage");
    assert!(read_metrics_file(&p)
        .unwrap_err()
        .to_string()
        .contains("mystery.dat"));
}

#[test]
fn ranks_and_non_utf8_names() {
    let (_d, p) = tmp_file(b"metrics_rank3.jsonl", b"{\"step\": 1, \"loss\": 1.0}\n");
    assert_eq!(read_metrics_file(&p).unwrap()[0].rank, Some(3));
    let (_d, p) = tmp_file(
        b"events.out.tfevents.\xff\xfe.rank1",
        &events(3, encode::Style::SimpleValue),
    );
    let s = read_metrics_file(&p).unwrap();
    assert_eq!((s[0].len(), s[0].rank), (3, Some(1)));
}

/// A file written with tensorboard's own protos (`make_tf2style.py`): TF2-style tensor scalars
/// (float32 / float64 / int64 / float16, metadata on the first event only), a histogram-plugin
/// tensor, and a `simple_value`.
#[test]
fn tensorboard_written_tensor_scalars() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/metrics/events.out.tfevents.1795318855.tf2style");
    let s = read_metrics_file(&p).unwrap();
    let loss = by_tag(&s, "loss");
    assert_eq!(loss.steps(), vec![1, 2, 3, 4, 5]);
    assert!(close(loss.values()[2], f64::from(1.0f32 / 3.0)));
    assert_eq!(by_tag(&s, "lr").values()[1], 2e-3);
    assert_eq!(by_tag(&s, "count").values(), vec![1.0, 2.0, 3.0, 4.0, 5.0]);
    assert_eq!(by_tag(&s, "h").values()[4], 2.5);
    assert_eq!(by_tag(&s, "simple").values()[0], 2.0);
    assert!(
        s.iter().all(|s| s.tag != "hist"),
        "histograms are not scalars"
    );
}
