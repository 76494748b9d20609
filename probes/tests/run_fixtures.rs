//! Run discovery against the fixture runs and odd folders (empty, missing, non-UTF-8 names,
//! symlink loops, Lightning layout, ranks, restarts).

use std::path::{Path, PathBuf};

use mltriage_probes::facts::facts_from_artifacts;
use mltriage_probes::metrics::tfevents::encode;
use mltriage_probes::run::{ArtifactKind, Run};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/fixtures");

fn fixture(rel: &str) -> PathBuf {
    Path::new(FIXTURES).join(rel)
}

#[test]
fn hf_healthy_run() {
    let run = Run::discover(&fixture("hf_healthy")).unwrap();
    let steps: Vec<u64> = run.checkpoints.iter().map(|c| c.step).collect();
    assert_eq!(steps, vec![0, 150, 300]);
    assert!(run.checkpoints[0].is_init && !run.checkpoints[2].is_final);
    let c300 = &run.checkpoints[2];
    assert_eq!(c300.weights.len(), 1);
    assert!(c300.weights[0].ends_with("checkpoint-300/model.safetensors"));
    assert!(c300.optimizer.as_ref().unwrap().ends_with("optimizer.pt"));
    assert!(
        c300.scheduler.is_some()
            && c300.trainer_state.is_some()
            && c300.config.is_some()
            && c300.training_args.is_some()
    );
    assert_eq!(run.batches().len(), 1);
    assert_eq!(run.of_kind(ArtifactKind::RngState).len(), 2);
    assert!(run
        .trainer_state_path()
        .unwrap()
        .ends_with("checkpoint-300/trainer_state.json"));
    assert_eq!(run.trainer_state().unwrap().global_step, Some(300));
    let m = run.metrics();
    let loss = m.get("loss").unwrap();
    assert_eq!(loss.len(), 300);
    assert_eq!(
        m.all("loss").len(),
        1,
        "trainer state and TensorBoard copies are kept once"
    );
    assert_eq!(
        m.get("learning_rate").unwrap().values()[1],
        3.3333333333333335e-05,
        "exact JSON value kept on a tie"
    );
    assert_eq!(m.get("eval_loss").unwrap().len(), 6);
    assert_eq!(run.max_step(), Some(300));
    assert!(run.problems().is_empty(), "{:?}", run.problems());
    let (cfg_path, cfg) = run.model_config().unwrap();
    assert!(cfg_path.ends_with("checkpoint-300/config.json"));
    assert_eq!(cfg.vocab_size, Some(512));
    let f = facts_from_artifacts(&run);
    assert_eq!(f.u64("vocab_size"), Some(512));
    assert_eq!(f.u64("total_steps"), Some(300));
    assert_eq!(f.get("pad_token_id"), None);
    assert_eq!(f.get("domain"), Some("llm"));
}

#[test]
fn lm_healthy_tb_run_and_single_checkpoint() {
    let run = Run::discover(&fixture("lm_healthy_tb")).unwrap();
    assert_eq!(
        run.checkpoints.iter().map(|c| c.step).collect::<Vec<_>>(),
        vec![0, 300]
    );
    assert!(run.checkpoints[1].optimizer.is_some());
    assert!(run
        .model_config()
        .unwrap()
        .0
        .ends_with("lm_healthy_tb/config.json"));
    let m = run.metrics();
    assert_eq!(m.get("loss").unwrap().len(), 300);
    assert_eq!(m.get("eval_loss").unwrap().first().unwrap().step, 50);
    assert!(m.get("grad_norm").is_some() && m.get("learning_rate").is_some());

    let one = Run::discover(&fixture("lm_healthy_tb/checkpoint-300")).unwrap();
    assert_eq!(one.checkpoints.len(), 1);
    assert_eq!(one.checkpoints[0].step, 300);
    assert!(one.artifacts.iter().all(|a| a.step == Some(300)));

    let file = Run::discover(&fixture("lm_healthy_tb/checkpoint-0/model.safetensors")).unwrap();
    assert_eq!(file.artifacts.len(), 1);
    assert_eq!(file.checkpoints.len(), 1);
    assert!(file.checkpoints[0].is_init);
}

#[test]
fn hf_training_args_and_scheduler_state_give_lr_facts() {
    use mltriage_probes::facts::FactSource;
    // A real HF TrainingArguments pickle: learning_rate, warmup_steps, cosine, accumulation.
    let run = Run::discover(&fixture("hf_healthy")).unwrap();
    let f = facts_from_artifacts(&run);
    assert_eq!(f.f64("lr_max"), Some(0.001));
    assert_eq!(f.u64("warmup_steps"), Some(30));
    assert_eq!(f.get("schedule"), Some("warmup_cosine"));
    assert_eq!(f.u64("accum_steps"), Some(1));
    assert!(matches!(
        &f.fact("lr_max").unwrap().source,
        FactSource::Artifact(p) if p.ends_with("training_args.bin")
    ));
    // A custom loop's scheduler.pt: lr_max from base_lrs, no schedule guessed.
    let run = Run::discover(&fixture("lm_healthy_tb")).unwrap();
    let f = facts_from_artifacts(&run);
    assert_eq!(f.f64("lr_max"), Some(0.001));
    assert!(matches!(
        &f.fact("lr_max").unwrap().source,
        FactSource::Artifact(p) if p.ends_with("scheduler.pt")
    ));
    assert_eq!(f.get("schedule"), None);
}

#[test]
fn lone_model_folder_has_no_step_and_is_not_the_init() {
    // model.safetensors + config.json, nothing else: trained weights of unknown step.
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    write(&root.join("model.safetensors"), b"x");
    write(&root.join("config.json"), b"{\"vocab_size\": 8}");
    let run = Run::discover(root).unwrap();
    assert_eq!(run.checkpoints.len(), 1);
    let c = &run.checkpoints[0];
    assert!(c.step_unknown && c.is_final && !c.is_init, "{c:?}");
    assert!(c.config.is_some());

    // With an `init/` folder beside it: the init stays the init, the final stays unknown.
    write(&root.join("init/model.safetensors"), b"x");
    let run = Run::discover(root).unwrap();
    let flags: Vec<(bool, bool)> = run
        .checkpoints
        .iter()
        .map(|c| (c.is_init, c.step_unknown))
        .collect();
    assert_eq!(flags, vec![(true, false), (false, true)]);

    // An explicit checkpoint-0 is the init; it says nothing of where training stopped, so the
    // final model's step stays unknown (not 1: a per-step ratio over "steps 0..1" would be false).
    let d = tempfile::tempdir().unwrap();
    write(&d.path().join("checkpoint-0/model.safetensors"), b"x");
    write(&d.path().join("model.safetensors"), b"y");
    let run = Run::discover(d.path()).unwrap();
    let steps: Vec<(u64, bool, bool)> = run
        .checkpoints
        .iter()
        .map(|c| (c.step, c.is_init, c.step_unknown))
        .collect();
    assert_eq!(steps, vec![(0, true, false), (0, false, true)]);
    // The same bytes as the init: a copy of it, set aside, never a step.
    write(&d.path().join("model.safetensors"), b"x");
    let run = Run::discover(d.path()).unwrap();
    assert_eq!(run.checkpoints.len(), 1);
    assert!(run.set_aside[0].path.ends_with("model.safetensors"));
    assert!(run.set_aside[0].reason.contains("same content"));
}

#[test]
fn every_fixture_discovers_without_problems() {
    for run in [
        "diffusion_latents_unscaled",
        "llm_left_pad_sft",
        "lm_bad_init",
        "lm_no_decay_split",
        "lm_sched_never_stepped",
        "vision_frozen_in_optimizer",
        "vision_healthy",
    ] {
        let r = Run::discover(&fixture(run)).unwrap();
        assert!(r.problems().is_empty(), "{run}: {:?}", r.problems());
        assert!(!r.batches().is_empty(), "{run}");
    }
    let v = Run::discover(&fixture("vision_frozen_in_optimizer")).unwrap();
    assert_eq!(
        v.checkpoints.iter().map(|c| c.step).collect::<Vec<_>>(),
        vec![0, 60, 200]
    );
    assert_eq!(facts_from_artifacts(&v).u64("num_classes"), Some(10));
    let bins = Run::discover(&fixture("lm_no_decay_split")).unwrap();
    assert!(bins.checkpoints[1].weights[0].ends_with("pytorch_model.bin"));
}

#[test]
fn missing_path_is_an_error_and_empty_dir_is_an_empty_run() {
    let e = Run::discover(Path::new("/nonexistent/run-dir"))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("/nonexistent/run-dir: "), "{e}");
    let d = tempfile::tempdir().unwrap();
    let run = Run::discover(d.path()).unwrap();
    assert!(run.artifacts.is_empty() && run.checkpoints.is_empty() && run.metrics().is_empty());
    assert_eq!(run.max_step(), None);
    assert!(run.model_config().is_none() && run.trainer_state().is_none());
}

fn write(p: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, bytes).unwrap();
}

fn events(steps: std::ops::Range<i64>, value: f64) -> Vec<u8> {
    let mut out = Vec::new();
    encode::record(&mut out, &encode::file_version_event(0.0));
    for s in steps {
        encode::record(
            &mut out,
            &encode::scalar_event(
                s,
                s as f64,
                b"train/loss",
                value,
                encode::Style::SimpleValue,
            ),
        );
    }
    out
}

#[test]
fn lightning_layout_ranks_restarts_and_bad_files() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("version_0");
    write(
        &root.join("metrics.csv"),
        b"epoch,step,train_loss_step,val_loss\n0,9,2.0,\n0,9,,2.5\n0,19,1.5,\n",
    );
    write(
        &root.join("hparams.yaml"),
        b"lr: 0.001\nwarmup_steps: 10\nmodel:\n  vocab_size: 99\n",
    );
    write(&root.join("checkpoints/epoch=0-step=10.ckpt"), b"x");
    write(&root.join("checkpoints/epoch=1-step=20.ckpt"), b"x");
    write(&root.join("checkpoints/last.ckpt"), b"x");
    // Two ranks, and a restart: the second file of rank 0 rewrites steps 5..9.
    write(
        &root.join("tb/events.out.tfevents.100.host.rank0"),
        &events(0..10, 1.0),
    );
    write(
        &root.join("tb/events.out.tfevents.200.host.rank0"),
        &events(5..15, 2.0),
    );
    write(
        &root.join("tb/rank-1/events.out.tfevents.100.host"),
        &events(0..3, 7.0),
    );
    write(
        &root.join("logs/bad.jsonl"),
        b"{\"step\": 1}\nnope\n{\"step\": 2}\n",
    );
    write(&root.join("logs/ragged_metrics.csv"), b"step,loss\n1\n");
    write(&root.join(".hidden/events.out.tfevents.1.x"), b"junk");
    let run = Run::discover(&root).unwrap();
    let steps: Vec<(u64, bool)> = run
        .checkpoints
        .iter()
        .map(|c| (c.step, c.is_final))
        .collect();
    // last.ckpt holds the bytes of epoch=1-step=20.ckpt: a copy, never step 21.
    assert_eq!(steps, vec![(10, false), (20, false)]);
    assert!(run.set_aside.iter().any(|s| s.path.ends_with("last.ckpt")));
    assert!(run.checkpoints[0].path.ends_with("epoch=0-step=10.ckpt"));
    let m = run.metrics();
    let tb: Vec<_> = m
        .all("loss")
        .into_iter()
        .filter(|s| s.tag == "train/loss")
        .collect();
    assert_eq!(tb.len(), 2, "ranks stay apart");
    let r0 = tb.iter().find(|s| s.rank == Some(0)).unwrap();
    assert_eq!(r0.len(), 15);
    assert_eq!(r0.value_at_or_before(4).unwrap().value, 1.0);
    assert_eq!(
        r0.value_at_or_before(5).unwrap().value,
        2.0,
        "later file wins on a repeated step"
    );
    assert_eq!(tb.iter().find(|s| s.rank == Some(1)).unwrap().len(), 3);
    let csv_loss = m
        .all("loss")
        .into_iter()
        .find(|s| s.tag == "train_loss_step")
        .unwrap();
    assert_eq!(csv_loss.steps(), vec![9, 19]);
    assert_eq!(m.get("eval_loss").unwrap().values(), vec![2.5]);
    let problems = run.problems();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems.iter().any(|p| p.contains("bad.jsonl: line 2")));
    assert!(problems
        .iter()
        .any(|p| p.contains("ragged_metrics.csv: line 2")));
    assert!(run
        .artifacts
        .iter()
        .all(|a| !a.path.to_string_lossy().contains(".hidden")));
    let f = facts_from_artifacts(&run);
    assert_eq!(f.f64("lr_max"), Some(0.001));
    assert_eq!(f.u64("warmup_steps"), Some(10));
    assert_eq!(f.get("vocab_size"), None, "nested yaml keys are not read");
}

#[test]
fn hf_output_dir_with_final_model_and_sharded_checkpoint() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    write(
        &root.join("checkpoint-100/model-00001-of-00002.safetensors"),
        b"x",
    );
    write(
        &root.join("checkpoint-100/model-00002-of-00002.safetensors"),
        b"x",
    );
    write(
        &root.join("checkpoint-100/model.safetensors.index.json"),
        b"{}",
    );
    write(&root.join("checkpoint-100/optimizer.pt"), b"x");
    write(&root.join("model.safetensors"), b"final");
    write(
        &root.join("config.json"),
        b"{\"num_labels\": 3, \"pad_token_id\": 0}",
    );
    write(&root.join("trainer_state.json"), b"{\"global_step\": 120, \"max_steps\": 120, \"log_history\": [{\"loss\": NaN, \"step\": 10}]}");
    let run = Run::discover(root).unwrap();
    assert_eq!(run.checkpoints.len(), 2);
    assert_eq!(run.checkpoints[0].weights.len(), 1);
    assert!(run.checkpoints[0].weights[0].ends_with("model.safetensors.index.json"));
    assert_eq!(
        (run.checkpoints[1].step, run.checkpoints[1].is_final),
        (120, true)
    );
    assert!(run
        .metrics()
        .get("loss")
        .unwrap()
        .first()
        .unwrap()
        .value
        .is_nan());
    let f = facts_from_artifacts(&run);
    assert_eq!(
        (
            f.u64("num_classes"),
            f.u64("pad_token_id"),
            f.u64("total_steps")
        ),
        (Some(3), Some(0), Some(120))
    );
    assert_eq!(run.max_step(), Some(120));
}

#[cfg(unix)]
#[test]
fn non_utf8_names_and_symlink_loops_do_not_panic() {
    use std::os::unix::ffi::OsStrExt;
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    let odd = root.join(std::ffi::OsStr::from_bytes(b"checkpoint-7\xff"));
    write(&odd.join("model.safetensors"), b"x");
    write(
        &root.join(std::ffi::OsStr::from_bytes(b"log\xfe.jsonl")),
        b"{\"step\": 1, \"loss\": 1}\n",
    );
    write(&root.join("config.json"), b"{broken");
    std::os::unix::fs::symlink(root, root.join("loop")).unwrap();
    std::os::unix::fs::symlink(root.join("nowhere"), root.join("dangling")).unwrap();
    let run = Run::discover(root).unwrap();
    assert_eq!(
        run.checkpoints.iter().map(|c| c.step).collect::<Vec<_>>(),
        vec![7]
    );
    assert_eq!(run.metrics().get("loss").unwrap().len(), 1);
    let problems = run.problems();
    assert!(
        problems
            .iter()
            .any(|p| p.contains("config.json: invalid JSON")),
        "{problems:?}"
    );
    assert!(run.model_config().is_none());
}

/// A safetensors file of one F32 tensor `head.weight` of shape [rows, 4], every byte `fill`.
fn st_head(rows: usize, fill: u8) -> Vec<u8> {
    let n = rows * 4 * 4;
    let header = format!(
        "{{\"head.weight\":{{\"dtype\":\"F32\",\"shape\":[{rows},4],\"data_offsets\":[0,{n}]}}}}"
    );
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(header.as_bytes());
    out.extend(std::iter::repeat_n(fill, n));
    out
}

/// The weights a fine-tune started from, kept in its folder, are not its final state: a
/// step-less model in a subfolder named for a pretraining, or one whose tensors have other
/// shapes than the run's checkpoints (a 4-class head beside a 6-class fine-tune), is set aside.
/// A step-less model of the run's own shapes in a subfolder is still the final model.
#[test]
fn the_weights_a_run_started_from_are_not_its_final_checkpoint() {
    for (folder, rows, kept) in [
        ("pretrained", 6, false),
        ("source", 4, false),
        ("final", 6, true),
    ] {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        write(
            &root.join("checkpoint-50/model.safetensors"),
            &st_head(6, 1),
        );
        write(
            &root.join("checkpoint-100/model.safetensors"),
            &st_head(6, 2),
        );
        write(
            &root.join(folder).join("model.safetensors"),
            &st_head(rows, 3),
        );
        let run = Run::discover(root).unwrap();
        let finals = run.checkpoints.iter().filter(|c| c.is_final).count();
        assert_eq!(finals, usize::from(kept), "{folder}: {:?}", run.checkpoints);
        let aside = run
            .set_aside
            .iter()
            .any(|s| s.path.ends_with(format!("{folder}/model.safetensors")));
        assert_eq!(aside, !kept, "{folder}: {:?}", run.set_aside);
    }
}

/// accelerate's automatic checkpoint naming counts saves (`checkpoints/checkpoint_0`,
/// `checkpoint_1`), not steps: each folder's own scheduler state (last_epoch) gives the step it
/// was saved at (50 and 100 in this field run), so checkpoint_0 is no init.
#[test]
fn accelerate_automatic_names_take_their_steps_from_the_saved_state() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/field/accel_b7_automatic_naming_healthy");
    let run = Run::discover(&dir).unwrap();
    let steps: Vec<(u64, bool)> = run
        .checkpoints
        .iter()
        .map(|c| (c.step, c.is_init))
        .collect();
    assert_eq!(
        steps,
        vec![(50, false), (100, false)],
        "{:?}",
        run.checkpoints
    );
}
