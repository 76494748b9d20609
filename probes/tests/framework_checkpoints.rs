//! Checkpoints of frameworks mltriage was not built against: timm `.pth.tar`, Ultralytics
//! pickled modules, Stable-Baselines3 archives and VecNormalize pickles, CleanRL
//! `.cleanrl_model`, HDF5/Keras files, checkpoint pointer files — and hostile variants of them
//! (a deflated zip-bomb member, a module cycle, exponential and deep module graphs), each a
//! one-line error naming the file. Fixtures: `data/frameworks/` (`make_fixtures.py` remakes
//! them and writes the numbers asserted here to `answers.json`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use mltriage_probes::facts::facts_from_artifacts;
use mltriage_probes::run::{explain, ArtifactKind, IndexUnit, Run};
use mltriage_probes::tensors::{sb3, vecnorm, OptimizerState, TensorFile};

fn data(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/frameworks")
        .join(p)
}

fn answers() -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(data("answers.json")).unwrap()).unwrap()
}

fn what<'a>(uses: &'a [mltriage_probes::run::FileUse], name: &str) -> &'a str {
    uses.iter()
        .find(|u| u.path.file_name().is_some_and(|n| n == name))
        .map(|u| u.what.as_str())
        .unwrap_or_else(|| panic!("{name} not explained"))
}

fn names(r: &Run) -> Vec<String> {
    r.checkpoints
        .iter()
        .map(|c| {
            format!(
                "{} {}",
                c.index_label(),
                c.weights[0].file_name().unwrap().to_string_lossy()
            )
        })
        .collect()
}

fn sum(tf: &TensorFile, name: &str) -> f64 {
    tf.to_f64_vec(name, 1 << 20).unwrap().iter().sum()
}

#[test]
fn timm_pth_tar_checkpoints_are_epochs_and_last_and_best_are_copies() {
    let r = Run::discover(&data("timm")).unwrap();
    assert!(r
        .artifacts
        .iter()
        .all(|a| a.kind == ArtifactKind::TorchFile));
    assert_eq!(
        names(&r),
        [
            "epoch 0 checkpoint-0.pth.tar",
            "epoch 1 checkpoint-1.pth.tar"
        ]
    );
    // Epoch 0 was saved after the first epoch: it is not the initial weights.
    assert!(r
        .checkpoints
        .iter()
        .all(|c| c.unit == IndexUnit::Epoch && !c.is_init && !c.before_training()));
    assert_eq!(r.checkpoints[1].epoch, Some(1));
    // The optimizer is embedded.
    assert_eq!(
        r.checkpoints[1].optimizer.as_deref(),
        Some(r.checkpoints[1].weights[0].as_path())
    );
    let aside: Vec<(String, &str)> = r
        .set_aside
        .iter()
        .map(|s| {
            (
                s.path.file_name().unwrap().to_string_lossy().into_owned(),
                s.reason.as_str(),
            )
        })
        .collect();
    assert_eq!(aside.len(), 2, "{aside:?}");
    let reason = |n: &str| aside.iter().find(|(a, _)| a == n).map(|(_, r)| *r).unwrap();
    assert!(
        reason("last.pth.tar").contains("checkpoint-1.pth.tar"),
        "{aside:?}"
    );
    assert!(
        reason("model_best.pth.tar").contains("checkpoint-0.pth.tar"),
        "{aside:?}"
    );
    let tf = TensorFile::open(data("timm/checkpoint-1.pth.tar")).unwrap();
    assert_eq!(tf.wrapper(), Some("state_dict"));
    let want = answers()["timm_linear_weight_sum"].as_f64().unwrap();
    assert!((sum(&tf, "3.weight") - want).abs() < 1e-5);
    let o = OptimizerState::read(data("timm/checkpoint-1.pth.tar")).unwrap();
    assert_eq!(o.groups[0].lr, Some(0.1));
    // The argparse Namespace saved as `args` gives facts.
    let f = facts_from_artifacts(&r);
    assert_eq!(f.get("lr_max"), Some("0.1"));
    let uses = explain(&r);
    assert!(
        what(&uses, "checkpoint-0.pth.tar").contains("epoch 0"),
        "{uses:?}"
    );
}

#[test]
fn ultralytics_modules_yield_state_dict_names_and_buffers() {
    let tf = TensorFile::open(data("ultralytics/weights/epoch2.pt")).unwrap();
    // `model` is None while training: the EMA module is the weights.
    assert_eq!(tf.wrapper(), Some("ema"));
    let w = tf.get("model.0.conv.weight").expect("state-dict name");
    assert_eq!((w.shape.clone(), w.buffer), (vec![4, 3, 3, 3], false));
    let want = answers()["ulike_conv_weight_sum"].as_f64().unwrap();
    assert!((sum(&tf, "model.0.conv.weight") - want).abs() < 1e-5);
    for b in [
        "model.0.bn.running_mean",
        "model.0.bn.num_batches_tracked",
        "model.1.anchor_grid",
    ] {
        assert!(tf.get(b).expect(b).buffer, "{b}");
    }
    // Plain tensor attributes (anchors, strides, stride) are not in a state dict.
    assert!(tf.tensors().iter().all(|t| !t.name.ends_with("anchors")
        && !t.name.ends_with("stride")
        && !t.name.ends_with("strides")));
    // A stripped best.pt keeps the model under `model` and no EMA.
    let best = TensorFile::open(data("ultralytics/weights/best.pt")).unwrap();
    assert_eq!(best.wrapper(), Some("model"));
    assert_eq!(best.tensors().len(), tf.tensors().len());
    let e = TensorFile::open_part(data("ultralytics/weights/best.pt"), "ema").unwrap_err();
    let e = e.to_string();
    assert!(e.starts_with(&data("ultralytics/weights/best.pt").display().to_string()));
    assert!(!e.contains('\n') && e.contains("\"ema\""), "{e}");
    assert!(TensorFile::open_part(data("ultralytics/weights/last.pt"), "ema").is_ok());
    // The embedded optimizer state dict reads.
    let o = OptimizerState::read(data("ultralytics/weights/last.pt")).unwrap();
    assert_eq!(o.groups[0].lr, Some(1e-3));

    let r = Run::discover(&data("ultralytics")).unwrap();
    assert_eq!(names(&r), ["epoch 2 epoch2.pt", "epoch 3 last.pt"]);
    assert!(r.checkpoints.iter().all(|c| c.unit == IndexUnit::Epoch));
    assert_eq!(r.set_aside.len(), 1);
    assert!(r.set_aside[0].path.ends_with("best.pt"));
    assert!(r.set_aside[0].reason.contains("best-scoring copy"));
    let f = facts_from_artifacts(&r);
    assert_eq!(f.get("lr_max"), Some("0.01"), "{f:?}");
    let uses = explain(&r);
    let last = what(&uses, "last.pt");
    assert!(
        last.contains("ema: module") && last.contains("epoch 3"),
        "{last}"
    );
}

#[test]
fn a_real_ultralytics_run_groups_by_epoch_when_present() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/field/ultralytics_healthy");
    if !dir.join("weights/last.pt").exists() {
        return;
    }
    let r = Run::discover(&dir).unwrap();
    let got = names(&r);
    assert_eq!(got.len(), 3, "{got:?}");
    assert!(
        got[0].starts_with("epoch 0 epoch0.pt") && got[2].ends_with("last.pt"),
        "{got:?}"
    );
    assert!(!r.checkpoints[0].before_training());
    assert!(r.checkpoints[2].is_final);
    assert!(r.set_aside.iter().any(|s| s.path.ends_with("best.pt")));
    let tf = TensorFile::open(dir.join("weights/last.pt")).unwrap();
    assert_eq!(tf.wrapper(), Some("model"));
    assert!(tf.get("model.0.conv.weight").is_some());
    assert!(tf.get("model.0.bn.running_var").unwrap().buffer);
}

#[test]
fn an_sb3_archive_is_parsed_once_however_many_readers_ask() {
    // The run's checkpoints, its facts, its profile and inspect's explanation each read the
    // archive's `data`; one parse serves them all.
    let d = tempfile::tempdir().unwrap();
    let z = d.path().join("rl_model_128_steps.zip");
    std::fs::copy(data("sb3/checkpoints/rl_model_128_steps.zip"), &z).unwrap();
    let run = Run::discover(d.path()).unwrap();
    assert_eq!(names(&run), ["step 128 rl_model_128_steps.zip"]);
    let facts = mltriage_probes::facts::Facts::from_args::<&str>(&[]).unwrap();
    let _ = mltriage_probes::profile::Profile::of(&run, &facts);
    let a = sb3::read(&z).unwrap();
    assert_eq!(a.num_timesteps, Some(128));
    assert_eq!(
        mltriage_probes::tensors::memo::parse_count(sb3::MEMO_KEY, &z),
        1
    );
}

#[test]
fn sb3_archives_are_weights_optimizer_and_step_in_one_file() {
    let r = Run::discover(&data("sb3")).unwrap();
    assert_eq!(
        names(&r),
        [
            "step 64 rl_model_64_steps.zip",
            "step 128 rl_model_128_steps.zip"
        ]
    );
    for c in &r.checkpoints {
        assert_eq!(c.optimizer.as_deref(), Some(c.weights[0].as_path()));
        let vn = c.vecnormalize.as_deref().expect("vecnormalize attached");
        assert!(
            vn.to_string_lossy().contains(&format!("_{}_steps", c.step)),
            "{vn:?}"
        );
    }
    // The final model saved at the same step as the last callback archive is a copy.
    assert_eq!(r.set_aside.len(), 1);
    assert!(r.set_aside[0].path.ends_with("ppo_cartpole.zip"));
    let a = answers();
    // The final model: num_timesteps and _n_updates as SB3 reported them after learn().
    let fin = sb3::read(data("sb3/ppo_cartpole.zip")).unwrap();
    assert_eq!(fin.num_timesteps, a["num_timesteps"].as_u64());
    assert_eq!(fin.n_updates, a["n_updates"].as_u64());
    // The callback saved at step 128 before that rollout's update.
    let z = data("sb3/checkpoints/rl_model_128_steps.zip");
    let arch = sb3::read(&z).unwrap();
    assert_eq!((arch.num_timesteps, arch.n_updates), (Some(128), Some(2)));
    let hp = |k: &str| arch.hyperparameters.get(k).map(String::as_str);
    assert_eq!(
        (
            hp("learning_rate"),
            hp("clip_range"),
            hp("n_steps"),
            hp("gamma")
        ),
        (Some("0.0003"), Some("0.2"), Some("32"), Some("0.98"))
    );
    assert_eq!(hp("normalize_advantage"), Some("true"));
    let tf = TensorFile::open(&z).unwrap();
    assert!(tf.get("action_net.weight").is_some(), "{:?}", tf.tensors());
    let o = OptimizerState::read(&z).unwrap();
    assert_eq!(o.groups[0].lr, Some(3e-4));
    assert!(!o.state.is_empty());
    let f = facts_from_artifacts(&r);
    assert_eq!(f.get("lr_max"), Some("0.0003"));
    assert_eq!(f.get("clip_range"), Some("0.2"));
    assert_eq!(f.get("discount_gamma"), Some("0.98"));
    assert_eq!(f.get("n_epochs"), Some("2"));
    let uses = explain(&r);
    assert!(what(&uses, "rl_model_64_steps.zip").contains("num_timesteps 64"));
    assert!(what(&uses, "rl_model_vecnormalize_64_steps.pkl").contains("step 64"));
}

#[test]
fn vecnormalize_pickles_read_their_running_statistics() {
    let a = answers();
    let close = |x: &[f64], key: &str| {
        let want: Vec<f64> = a[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        assert_eq!(x.len(), want.len());
        assert!(
            x.iter().zip(&want).all(|(p, q)| (p - q).abs() < 1e-12),
            "{x:?} {want:?}"
        );
    };
    for f in [
        "vec_normalize.pkl",
        "vec_normalize_p2.pkl",
        "vec_normalize_p5.pkl",
    ] {
        let v = vecnorm::read(data(&format!("sb3/{f}"))).unwrap();
        let obs = v.obs_rms.as_ref().expect(f);
        close(&obs.mean, "obs_mean");
        close(&obs.var, "obs_var");
        assert_eq!(obs.shape, vec![4]);
        assert!(
            (obs.count - a["obs_count"].as_f64().unwrap()).abs() < 1e-9,
            "{f}"
        );
        let ret = v.ret_rms.as_ref().unwrap();
        assert!((ret.count - a["ret_count"].as_f64().unwrap()).abs() < 1e-9);
        assert!(obs.updated() && ret.updated());
        assert_eq!(
            (v.training, v.norm_obs, v.norm_reward, v.clip_obs, v.gamma),
            (Some(true), Some(true), Some(true), Some(10.0), Some(0.98)),
            "{f}"
        );
    }
    // A pickle that is not VecNormalize is a one-line error naming it.
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("vec_normalize.pkl");
    std::fs::write(&p, b"\x80\x02}q\x00X\x01\x00\x00\x00aK\x01s.").unwrap();
    let e = vecnorm::read(&p).unwrap_err().to_string();
    assert!(
        e.starts_with(&p.display().to_string()) && !e.contains('\n'),
        "{e}"
    );
}

#[test]
fn cleanrl_model_files_are_torch_files_by_content() {
    let r = Run::discover(&data("cleanrl")).unwrap();
    assert_eq!(r.artifacts[0].kind, ArtifactKind::TorchFile);
    assert_eq!(r.checkpoints.len(), 1);
    let tf = TensorFile::open(data("cleanrl/ppo.cleanrl_model")).unwrap();
    assert_eq!(tf.tensors().len(), 9);
}

fn zip_of(path: &Path, members: &[(&str, &[u8])]) {
    let f = std::fs::File::create(path).unwrap();
    let mut z = zip::ZipWriter::new(f);
    let opt =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (n, b) in members {
        z.start_file(*n, opt).unwrap();
        z.write_all(b).unwrap();
    }
    z.finish().unwrap();
}

#[test]
fn hdf5_and_keras_files_are_recognised_and_explained_not_read() {
    let d = tempfile::tempdir().unwrap();
    let mut h5 = b"\x89HDF\r\n\x1a\n".to_vec();
    h5.extend_from_slice(&[0u8; 256]);
    std::fs::write(d.path().join("model.h5"), &h5).unwrap();
    std::fs::write(d.path().join("weights.data"), &h5).unwrap();
    zip_of(
        &d.path().join("model.keras"),
        &[
            ("metadata.json", b"{}"),
            ("config.json", b"{}"),
            ("model.weights.h5", &h5),
        ],
    );
    let r = Run::discover(d.path()).unwrap();
    assert!(
        r.artifacts
            .iter()
            .all(|a| a.kind == ArtifactKind::Hdf5Weights),
        "{:?}",
        r.artifacts
    );
    assert!(r.checkpoints.is_empty());
    let uses = explain(&r);
    assert!(uses
        .iter()
        .all(|u| !u.used && u.what.contains("no pure-Rust HDF5 reader")));
    assert!(what(&uses, "model.keras").contains(".keras archive"));
    // An archive whose config states the head and the loss is read for them (the weights
    // inside still are not).
    let config = br#"{"class_name": "Sequential", "config": {"layers": [{"class_name": "Dense",
        "config": {"name": "out", "units": 3, "activation": "softmax"}}]},
        "compile_config": {"loss": "sparse_categorical_crossentropy"}}"#;
    zip_of(
        &d.path().join("model.keras"),
        &[
            ("metadata.json", b"{}"),
            ("config.json", config),
            ("model.weights.h5", &h5),
        ],
    );
    let r = Run::discover(d.path()).unwrap();
    let uses = explain(&r);
    let w = what(&uses, "model.keras");
    assert!(
        w.starts_with("read as a Keras v3 archive")
            && w.contains("3 units")
            && w.contains("HDF5 weights inside are not read"),
        "{w}"
    );
    assert_eq!(r.keras_model().and_then(|m| m.num_classes()), Some(3));
}

#[test]
fn pointer_files_are_followed_to_their_checkpoint() {
    let d = tempfile::tempdir().unwrap();
    let ck = d.path().join("global_step5");
    std::fs::create_dir(&ck).unwrap();
    std::fs::copy(data("cleanrl/ppo.cleanrl_model"), ck.join("model.pt")).unwrap();
    std::fs::write(d.path().join("latest"), "global_step5\n").unwrap();
    std::fs::write(
        d.path().join("checkpoint"),
        "model_checkpoint_path: \"ckpt-9\"\n",
    )
    .unwrap();
    let r = Run::discover(d.path()).unwrap();
    let uses = explain(&r);
    let latest = what(&uses, "latest");
    assert!(
        latest.contains("pointer") && latest.contains("step 5"),
        "{latest}"
    );
    let tf = what(&uses, "checkpoint");
    assert!(
        tf.contains("ckpt-9") && tf.contains("not in this run"),
        "{tf}"
    );
}

/// One line, naming the file, within a second.
fn one_line(e: impl std::fmt::Display, p: &Path, t: Instant) -> String {
    let e = e.to_string();
    assert!(e.starts_with(&p.display().to_string()), "{e}");
    assert!(!e.contains('\n'), "{e}");
    assert!(t.elapsed().as_secs() < 5, "took {:?}", t.elapsed());
    e
}

#[test]
fn a_deflated_zip_bomb_member_is_refused_not_inflated() {
    let p = data("hostile/bomb.zip");
    let t = Instant::now();
    let e = one_line(TensorFile::open(&p).unwrap_err(), &p, t);
    assert!(e.contains("compressed"), "{e}");
    let e = one_line(sb3::read(&p).unwrap_err(), &p, t);
    assert!(e.contains("compressed"), "{e}");
    let r = Run::discover(p.parent().unwrap()).unwrap();
    let uses = explain(&r);
    assert!(!what(&uses, "bomb.zip").is_empty());
}

#[test]
fn a_module_that_contains_itself_is_cut_not_looped() {
    let p = data("hostile/cycle.pt");
    let tf = TensorFile::open(&p).unwrap();
    assert!(tf.get("model.0.conv.weight").is_some());
    assert!(tf.tensors().iter().all(|t| !t.name.contains("loop")));
}

/// A torch zip whose data.pkl is `pkl` (no storages).
fn torch_zip(path: &Path, pkl: &[u8]) {
    zip_of(
        path,
        &[("archive/data.pkl", pkl), ("archive/version", b"3\n")],
    );
}

/// `Module()` with BUILD state `{'_modules': {<children>}, '_parameters': {}}`; `children`
/// is the pickle of the (key, value) pairs.
fn module(children: &[u8]) -> Vec<u8> {
    let mut p = b"ctorch.nn.modules.module\nModule\n)\x81}(X\x08\x00\x00\x00_modules}(".to_vec();
    p.extend_from_slice(children);
    p.extend_from_slice(b"uX\x0b\x00\x00\x00_parameters}ub");
    p
}

#[test]
fn exponential_and_deep_module_graphs_are_budget_errors() {
    let d = tempfile::tempdir().unwrap();
    // Level i holds level i-1 twice (memo refs): 2^60 modules once expanded.
    let mut p = b"\x80\x02".to_vec();
    p.extend_from_slice(&module(b""));
    p.extend_from_slice(b"r\x00\x00\x00\x00");
    for i in 1..60u32 {
        let mut kids = b"X\x01\x00\x00\x00aj".to_vec();
        kids.extend_from_slice(&(i - 1).to_le_bytes());
        kids.extend_from_slice(b"X\x01\x00\x00\x00bj");
        kids.extend_from_slice(&(i - 1).to_le_bytes());
        p.extend_from_slice(&module(&kids));
        p.push(b'r');
        p.extend_from_slice(&i.to_le_bytes());
    }
    p.push(b'.');
    let wide = d.path().join("wide.pt");
    torch_zip(&wide, &p);
    let t = Instant::now();
    let e = one_line(TensorFile::open(&wide).unwrap_err(), &wide, t);
    assert!(e.contains("items") || e.contains("MiB"), "{e}");
    // A chain of 500 nested modules.
    let mut p = b"\x80\x02".to_vec();
    let mut inner = module(b"");
    for _ in 0..500 {
        let mut kids = b"X\x01\x00\x00\x00c".to_vec();
        kids.extend_from_slice(&inner);
        inner = module(&kids);
    }
    p.extend_from_slice(&inner);
    p.push(b'.');
    let deep = d.path().join("deep.pt");
    torch_zip(&deep, &p);
    let t = Instant::now();
    let e = one_line(TensorFile::open(&deep).unwrap_err(), &deep, t);
    assert!(e.contains("deeper"), "{e}");
    // Discovery and inspect survive both.
    let r = Run::discover(d.path()).unwrap();
    let _ = explain(&r);
}
