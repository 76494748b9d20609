//! Reads the shared fixture runs (real HF / PyTorch outputs) through `mltriage_probes::tensors`
//! and checks values computed independently with numpy.

use std::path::PathBuf;

use mltriage_probes::tensors::optim::{lookup_f64, lookup_str};
use mltriage_probes::tensors::{
    lookup, read_pickled_dict, DType, FileKind, OptimizerState, TensorFile, Value,
};

fn fx(rel: &str) -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/fixtures"
    ))
    .join(rel)
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs()
}

#[test]
fn fixtures_directory_resolves() {
    assert!(fx("README.md").is_file(), "{}", fx("README.md").display());
}

#[test]
fn bad_init_weights_have_unit_scale_std() {
    let f = TensorFile::open(fx("lm_bad_init/checkpoint-0/model.safetensors")).unwrap();
    assert_eq!(f.kind(), FileKind::Safetensors);
    let name = "transformer.h.0.attn.c_attn.weight";
    let info = f.get(name).unwrap();
    assert_eq!(
        (info.dtype, info.shape.clone()),
        (DType::F32, vec![64, 192])
    );
    let s = f.stats(name).unwrap();
    assert_eq!(
        (s.count, s.finite, s.nan, s.inf),
        (64 * 192, 64 * 192, 0, 0)
    );
    assert!(close(s.std, 1.2113293, 1e-5), "{}", s.std);
    assert!(close(s.mean, 0.009026379, 1e-4), "{}", s.mean);
    assert_eq!(s.hist.total(), s.count);
}

#[test]
fn healthy_init_weights_have_small_std() {
    let f = TensorFile::open(fx("lm_healthy_tb/checkpoint-0/model.safetensors")).unwrap();
    let s = f.stats("transformer.h.0.attn.c_attn.weight").unwrap();
    assert!(close(s.std, 0.020051377, 1e-5), "{}", s.std);
    assert!(close(s.mean, -0.00039750765, 1e-3), "{}", s.mean);
}

#[test]
fn batchnorm_counter_is_a_scalar_i64() {
    let f = TensorFile::open(fx("vision_healthy/checkpoint-0/model.safetensors")).unwrap();
    let info = f.get("backbone.1.num_batches_tracked").unwrap();
    assert_eq!(
        (info.dtype, info.shape.len(), info.numel()),
        (DType::I64, 0, 1)
    );
    assert_eq!(
        f.to_i64_vec("backbone.1.num_batches_tracked", 1).unwrap(),
        vec![0]
    );
    assert!(
        f.to_i64_vec("backbone.0.weight", 1_000_000).is_err(),
        "float tensor as i64"
    );
}

#[test]
fn torch_zip_state_dict_matches_safetensors_inventory() {
    let pt = TensorFile::open(fx("lm_no_decay_split/checkpoint-300/pytorch_model.bin")).unwrap();
    assert_eq!(pt.kind(), FileKind::TorchZip);
    let st = TensorFile::open(fx("lm_healthy_tb/checkpoint-300/model.safetensors")).unwrap();
    let mut a: Vec<_> = pt
        .tensors()
        .iter()
        .map(|t| (t.name.clone(), t.shape.clone()))
        .collect();
    let mut b: Vec<_> = st
        .tensors()
        .iter()
        .map(|t| (t.name.clone(), t.shape.clone()))
        .collect();
    a.sort();
    b.sort();
    assert_eq!(a.len(), 28);
    assert_eq!(a, b);
    // Every tensor streams and loads.
    for t in pt.tensors() {
        let s = pt.stats(&t.name).unwrap();
        assert_eq!(s.count as usize, t.numel());
        assert_eq!(s.nan + s.inf, 0, "{}", t.name);
    }
    let t = pt
        .load("transformer.wte.weight", &candle_core::Device::Cpu)
        .unwrap();
    assert_eq!(
        t.dims(),
        pt.get("transformer.wte.weight").unwrap().shape.as_slice()
    );
}

#[test]
fn torch_zip_and_candle_agree_on_values() {
    let pt = TensorFile::open(fx("lm_no_decay_split/checkpoint-0/pytorch_model.bin")).unwrap();
    let name = &pt.tensors()[0].name.clone();
    let ours = pt.to_f64_vec(name, 1 << 24).unwrap();
    let t = pt.load(name, &candle_core::Device::Cpu).unwrap();
    let theirs: Vec<f64> = t
        .flatten_all()
        .unwrap()
        .to_dtype(candle_core::DType::F64)
        .unwrap()
        .to_vec1()
        .unwrap();
    assert_eq!(ours, theirs);
}

#[test]
fn optimizer_without_decay_split_has_one_decayed_group() {
    let o = OptimizerState::read(fx("lm_no_decay_split/checkpoint-300/optimizer.pt")).unwrap();
    assert_eq!(o.groups.len(), 1);
    let g = &o.groups[0];
    assert_eq!(g.weight_decay, Some(0.1));
    assert_eq!(g.params.len(), 28);
    let s2 = &o.state[&2];
    assert_eq!(s2.exp_avg.as_ref().unwrap().shape, vec![64]);
    assert_eq!(s2.step, Some(300.0));
    assert_eq!(s2.shape, vec![64]);
    assert!(o.params_without_state().is_empty());
}

#[test]
fn hf_optimizer_has_decay_and_no_decay_groups() {
    let o = OptimizerState::read(fx("hf_healthy/checkpoint-300/optimizer.pt")).unwrap();
    assert_eq!(o.groups.len(), 2);
    let (a, b) = (&o.groups[0], &o.groups[1]);
    assert_eq!((a.weight_decay, a.params.len()), (Some(0.1), 10));
    assert_eq!((b.weight_decay, b.params.len()), (Some(0.0), 18));
    assert_eq!(a.lr, Some(0.0));
    assert_eq!(a.initial_lr, Some(0.001));
    assert!(a.betas.is_some() && a.eps.is_some());
}

#[test]
fn scheduler_that_never_stepped() {
    let v = read_pickled_dict(fx("lm_sched_never_stepped/checkpoint-300/scheduler.pt")).unwrap();
    assert_eq!(lookup(&v, "last_epoch").and_then(Value::as_i64), Some(0));
    let lr = lookup(&v, "_last_lr")
        .and_then(Value::as_seq)
        .and_then(|s| s.first())
        .and_then(Value::as_f64)
        .unwrap();
    assert!(close(lr, 3.33e-5, 1e-2), "{lr}");
}

#[test]
fn training_args_are_read_through_the_opaque_object() {
    let v = read_pickled_dict(fx("hf_healthy/checkpoint-300/training_args.bin")).unwrap();
    assert!(matches!(&v, Value::Object { class, .. } if class.1 == "TrainingArguments"));
    assert!(lookup_f64(&v, "learning_rate").is_some());
    assert!(lookup_f64(&v, "weight_decay").is_some());
    assert_eq!(lookup_f64(&v, "gradient_accumulation_steps"), Some(1.0));
    assert_eq!(lookup_f64(&v, "max_grad_norm"), Some(1.0));
    assert!(lookup_str(&v, "lr_scheduler_type").is_some());
}

#[test]
fn frozen_backbone_keeps_tiny_first_moment() {
    let o =
        OptimizerState::read(fx("vision_frozen_in_optimizer/checkpoint-200/optimizer.pt")).unwrap();
    let s0 = &o.state[&0];
    let m = o.l2_norm(s0.exp_avg.as_ref().unwrap()).unwrap();
    let v = o.l2_norm(s0.exp_avg_sq.as_ref().unwrap()).unwrap();
    assert!(close(m, 2.8e-8, 0.1), "{m}");
    assert!(close(v, 5.0e-4, 0.1), "{v}");
}

#[test]
fn two_checkpoints_compare() {
    let a = TensorFile::open(fx("hf_healthy/checkpoint-150/model.safetensors")).unwrap();
    let b = TensorFile::open(fx("hf_healthy/checkpoint-300/model.safetensors")).unwrap();
    let name = "transformer.h.0.attn.c_attn.weight";
    let d = a.compare(name, &b, name).unwrap();
    assert!(!d.identical_bytes && d.norm_diff > 0.0);
    assert!(d.cosine() > 0.5 && d.cosine() <= 1.0 + 1e-12);
    let same = a.compare(name, &a, name).unwrap();
    assert!(same.identical_bytes && same.norm_diff == 0.0);
}

#[test]
fn every_fixture_checkpoint_opens_and_streams() {
    let root = fx("");
    let mut seen = 0;
    let mut stack = vec![root];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            if n.ends_with(".safetensors") || n == "pytorch_model.bin" {
                let f = TensorFile::open(&p).unwrap();
                for t in f.tensors() {
                    f.stats(&t.name).unwrap();
                }
                seen += 1;
            } else if n.ends_with(".pt") || n.ends_with(".pth") || n.ends_with(".bin") {
                read_pickled_dict(&p).unwrap();
                seen += 1;
            }
        }
    }
    assert!(seen > 20, "{seen}");
}

#[test]
fn a_deepspeed_zero_partition_reads_as_groups_with_named_params() {
    let dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/field/deepspeed_zero2_no_decay_split/global_step300"
    ));
    let o = OptimizerState::read(dir.join("zero_pp_rank_0_mp_rank_00_optim_states.pt")).unwrap();
    assert!(o.partitioned);
    assert!(o.state.is_empty(), "ZeRO flattens per-parameter state");
    assert_eq!(o.groups.len(), 1);
    let g = &o.groups[0];
    assert_eq!(g.weight_decay, Some(0.1));
    assert_eq!(g.eps, Some(1e-8));
    let names = g
        .param_names
        .as_ref()
        .expect("names from mp_rank_00_model_states.pt");
    assert_eq!(names.len(), g.params.len());
    assert!(names.iter().any(|n| n == "fc1.bias"), "{names:?}");
    assert!(names.iter().any(|n| n == "norm.weight"), "{names:?}");
    // A plain optimizer.pt is not partitioned.
    let plain = OptimizerState::read(fx("lm_no_decay_split/checkpoint-300/optimizer.pt")).unwrap();
    assert!(!plain.partitioned);
}

fn field(rel: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/field")).join(rel)
}

#[test]
fn a_dcp_checkpoint_assembles_its_chunks_into_whole_tensors() {
    // Reference values from torch: dcp_to_torch_save, then the tensor's sum and elements.
    let f = TensorFile::open(field("dcp_fsdp_healthy/step_300/.metadata")).unwrap();
    assert_eq!(f.kind(), FileKind::Dcp);
    let names: Vec<&str> = f.tensors().iter().map(|t| t.name.as_str()).collect();
    assert!(
        names.contains(&"fc1.weight") && !names.iter().any(|n| n.starts_with("optim")),
        "{names:?}"
    );
    let t = f.get("fc1.weight").unwrap();
    assert_eq!(t.shape, vec![64, 128]);
    let v = f.to_f64_vec("fc1.weight", 1 << 20).unwrap();
    // Row 33 comes from the second rank's chunk (rows 32..64).
    assert!(
        close(v[33 * 128 + 5], 0.044628847390413284, 1e-6),
        "{}",
        v[33 * 128 + 5]
    );
    assert!(close(v[127], 0.06239122152328491, 1e-6));
    assert!(close(v.iter().sum::<f64>(), -1.5253915070018138, 1e-5));
    let b = f.to_f64_vec("norm.bias", 64).unwrap();
    assert!(close(b.iter().sum::<f64>(), -0.19275974249467254, 1e-5));
}

#[test]
fn a_broken_dcp_checkpoint_is_a_one_line_error_naming_the_file() {
    let d = tempfile::tempdir().unwrap();
    let src = field("dcp_fsdp_healthy/step_300");
    for n in [".metadata", "__0_0.distcp", "__1_0.distcp"] {
        std::fs::copy(src.join(n), d.path().join(n)).unwrap();
    }
    // A shard cut short: the tensors whose chunks lie past the cut fail, naming the shard.
    let shard = d.path().join("__1_0.distcp");
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&shard)
        .unwrap();
    f.set_len(100).unwrap();
    let tf = TensorFile::open(d.path().join(".metadata")).unwrap();
    let Err(e) = tf.to_f64_vec("out.weight", 1 << 20) else {
        panic!("a chunk past the end of its shard was read");
    };
    let e = e.to_string();
    assert!(e.contains(".metadata") || e.contains("distcp"), "{e}");
    assert!(!e.contains('\n'), "{e}");
    // A metadata file that is not a pickle.
    std::fs::write(d.path().join(".metadata"), b"not a pickle").unwrap();
    let Err(e) = TensorFile::open(d.path().join(".metadata")) else {
        panic!("garbage metadata opened");
    };
    let e = e.to_string();
    assert!(e.contains(".metadata") && !e.contains('\n'), "{e}");
}
