use std::path::PathBuf;
use mltriage_probes::tensors::{OptimizerState, TensorFile, read_pickled_dict};
use mltriage_probes::run::Run;

fn fx(rel: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/fixtures")).join(rel)
}

#[test]
#[ignore]
fn dump() {
    for r in ["hf_healthy","lm_bad_init","lm_healthy_tb","lm_no_decay_split","lm_sched_never_stepped","vision_frozen_in_optimizer","vision_healthy"] {
        let run = Run::discover(&fx(r)).unwrap();
        println!("=== {r}");
        for c in &run.checkpoints {
            println!("-- ckpt step {} init {} final {} w {:?} opt {:?} sch {:?}", c.step, c.is_init, c.is_final, c.weights, c.optimizer, c.scheduler);
            for w in &c.weights {
                let f = TensorFile::open(w).unwrap();
                for t in f.tensors() {
                    let s = f.stats(&t.name).unwrap();
                    println!("   {} {:?} {:?} mean {:.4e} std {:.4e} zf {:.3}", t.name, t.dtype, t.shape, s.mean, s.std, s.zero_frac());
                }
            }
            if let Some(o) = &c.optimizer {
                let o = OptimizerState::read(o).unwrap();
                for g in &o.groups { println!("   group {} lr {:?} eps {:?} wd {:?} n {} names {:?} extra {:?}", g.index, g.lr, g.eps, g.weight_decay, g.params.len(), g.param_names.as_ref().map(|v| v.len()), g.extra); }
                for (id, s) in &o.state {
                    let ea = s.exp_avg.as_ref().map(|t| o.l2_norm(t).unwrap());
                    let ev = s.exp_avg_sq.as_ref().map(|t| o.l2_norm(t).unwrap());
                    println!("   st {id} step {:?} {:?} {:?} m {:?} v {:?}", s.step, s.shape, s.dtype, ea, ev);
                }
            }
            if let Some(s) = &c.scheduler {
                let v = read_pickled_dict(s).unwrap();
                println!("   sched {}", v.repr(400));
            }
        }
    }
}
