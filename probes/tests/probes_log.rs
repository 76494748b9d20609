//! `log_errors` on synthetic captured logs: each carries the real error text of one entry (the
//! CUDA and NCCL messages are copied from what torch prints: no GPU produces them here), and
//! healthy twins hold training chatter only.

mod common;

use mltriage_probes::device::Compute;
use mltriage_probes::facts::Facts;
use mltriage_probes::probe::{run_probe, ProbeCtx, Status, Verdict};
use mltriage_probes::probes::log;
use mltriage_probes::run::Run;

fn ask(files: &[(&str, &str)]) -> Verdict {
    let d = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(d.path().join(name), text).unwrap();
    }
    let run = Run::discover(d.path()).unwrap();
    let facts = Facts::new();
    let params = common::thresholds("log_errors");
    let c = Compute::cpu();
    let ctx = ProbeCtx {
        run: &run,
        facts: &facts,
        profile: &mltriage_probes::profile::Profile::of(&run, &facts),
        params: &params,
        compute: &c,
        baseline: None,
    };
    let mut v = run_probe(&log::SPECS[0], &ctx);
    assert_eq!(v.len(), 1);
    v.remove(0)
}

const CHATTER: &str = "{'loss': 2.31, 'grad_norm': 1.2, 'learning_rate': 5e-05, 'epoch': 0.1}\n\
{'loss': 1.97, 'grad_norm': 0.9, 'learning_rate': 4.5e-05, 'epoch': 0.2}\n\
Saving model checkpoint to out/checkpoint-500\n";

const OOM: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this process has 78.08 GiB memory in use. Of the allocated memory 60.12 GiB is allocated by PyTorch, and 16.50 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.";

#[test]
fn a_healthy_log_passes_and_no_log_skips() {
    let v = ask(&[("train.log", CHATTER)]);
    assert_eq!(v.status, Status::Pass, "{v:?}");
    let v = ask(&[("metrics.jsonl", "{\"step\": 1, \"loss\": 2.0}\n")]);
    assert_eq!(v.status, Status::Skip, "{v:?}");
}

#[test]
fn the_error_the_log_ends_in_names_its_entry() {
    let cases = [
        ("RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. This error indicates that your module has parameters that were not used in producing loss.", "D2"),
        ("[rank1]:[E ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=120049, OpType=_ALLGATHER_BASE, NumelIn=1, NumelOut=8, Timeout(ms)=1800000) ran for 1800095 milliseconds before timing out.", "D1"),
        ("torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. port: 29500, useIpv6: False, code: -98, name: EADDRINUSE, message: address already in use", "D5"),
        ("RuntimeError: DataLoader worker (pid 4242) is killed by signal: Bus error. It is possible that dataloader's workers are out of shared memory. Please try to raise your shared memory limit.", "T3"),
        ("ValueError: Attempting to unscale FP16 gradients.", "P4"),
        ("KeyError: 'chosen'", "L8"),
        ("Exception: Current loss scale already at minimum - cannot decrease scale anymore. Exiting run.", "P2"),
        ("RuntimeError: Error(s) in loading state_dict: The checkpoint being loaded used a DP world size of 8 but the current world size is 4. Automatic adjustment of ZeRO's optimizer state partitioning with a new world size is not currently supported.", "D4"),
        ("TypeError: SFTTrainer.__init__() got an unexpected keyword argument 'tokenizer'", "U1"),
        ("TypeError: TrainingArguments.__init__() got an unexpected keyword argument 'evaluation_strategy'", "U2"),
        ("requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: https://huggingface.co/meta-llama/Llama-2-7b-hf/resolve/main/config.json", "L10"),
        ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 23.65 GiB of which 3.06 MiB is free. Of the allocated memory 22.8 GiB is allocated by PyTorch, and 120.00 MiB is reserved by PyTorch but unallocated.", "M1"),
    ];
    for (line, want) in cases {
        let log = format!("{CHATTER}Traceback (most recent call last):\n  File \"train.py\", line 88, in <module>\n{line}\n");
        let v = ask(&[("train.log", &log)]);
        assert_eq!(
            (v.entry.as_str(), v.status, v.outcome.as_str()),
            (want, Status::Fail, want),
            "{line}: {v:?}"
        );
        assert!(v.measured.contains("train.log:"), "{v:?}");
    }
}

#[test]
fn an_oom_is_refined_by_fragmentation_and_by_the_evaluation_loop() {
    // 16.5 GiB reserved but unallocated against a 2 GiB request: fragmentation (M3).
    let v = ask(&[("slurm-123.out", &format!("{CHATTER}{OOM}\n"))]);
    assert_eq!(v.entry, "M3", "{v:?}");
    // Raised inside the evaluation loop, with little unallocated: M6.
    let eval = format!(
        "{CHATTER}Traceback (most recent call last):\n  File \"/x/transformers/trainer.py\", line 4100, in evaluation_loop\n    losses, logits, labels = self.prediction_step(model, inputs)\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. Of the allocated memory 70.1 GiB is allocated by PyTorch, and 100.00 MiB is reserved by PyTorch but unallocated.\n"
    );
    let v = ask(&[("nohup.out", &eval)]);
    assert_eq!(v.entry, "M6", "{v:?}");
}

#[test]
fn the_last_error_wins_and_a_warning_line_only_warns() {
    // A TRL warning early, then the run dies on NCCL: D1 leads, the warning is evidence.
    let log = format!(
        "{CHATTER}UserWarning: The average ratio of batch (1.02) exceeds threshold. KL divergence is starting to become negative: -0.12 - this might be a precursor for failed training.\n{CHATTER}Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE)\n"
    );
    let v = ask(&[("train.log", &log)]);
    assert_eq!((v.entry.as_str(), v.status), ("D1", Status::Fail), "{v:?}");
    assert!(
        v.evidence.iter().any(|e| format!("{e:?}").contains("H1")),
        "{v:?}"
    );
    let v = ask(&[(
        "train.log",
        &format!("{CHATTER}KL divergence is starting to become negative: -0.3\n{CHATTER}"),
    )]);
    assert_eq!((v.entry.as_str(), v.status), ("H1", Status::Warn), "{v:?}");
}

#[test]
fn a_dataloader_bottleneck_warning_warns_t1() {
    let line = "UserWarning: The 'train_dataloader' does not have many workers which may be a bottleneck. Consider increasing the value of the `num_workers` argument` to `num_workers=7` in the `DataLoader` to improve performance.";
    let v = ask(&[("train.log", &format!("{CHATTER}{line}\n{CHATTER}"))]);
    assert_eq!((v.entry.as_str(), v.status), ("T1", Status::Warn), "{v:?}");
    // Overflow-and-skip lines while the scaler calibrates are healthy chatter, not P2.
    let calib = format!("{CHATTER}[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768\n{CHATTER}");
    assert_eq!(ask(&[("train.log", &calib)]).status, Status::Pass);
}

#[test]
fn an_oom_after_many_logged_steps_is_a_late_oom() {
    let steps: String = (1..=40)
        .map(|i| {
            format!(
                "{{'loss': {:.3}, 'grad_norm': 1.1, 'learning_rate': 5e-05, 'epoch': {:.2}}}\n",
                2.5 - i as f64 * 0.01,
                i as f64 / 100.0
            )
        })
        .collect();
    let oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.20 GiB. GPU 0 has a total capacity of 23.65 GiB of which 1.06 GiB is free. Of the allocated memory 20.1 GiB is allocated by PyTorch, and 200.00 MiB is reserved by PyTorch but unallocated.";
    let v = ask(&[("train.log", &format!("{steps}{oom}\n"))]);
    assert_eq!(
        (v.entry.as_str(), v.status, v.outcome.as_str()),
        ("M5", Status::Fail, "M5"),
        "{v:?}"
    );
    // The same OOM at the first step stays M1.
    let v = ask(&[("train.log", &format!("{CHATTER}{oom}\n"))]);
    assert_eq!(v.entry, "M1", "{v:?}");
}
