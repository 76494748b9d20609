//! When in a run the trouble shows: at the start, later on, or while evaluating. Read the same
//! way from a query ("out of memory after 15K iterations", "OOM during the first evaluation")
//! and from an entry's title ("CUDA out of memory at the first step", "OOM during
//! evaluation"), so an entry bound to one time yields to a query that places the trouble at
//! another.

/// A time in the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// The first step, start-up, before any loss is logged.
    Start,
    /// After the run has gone for a while: a count of steps, epochs or batches, mid-run.
    Later,
    /// While evaluating or validating.
    Eval,
}

/// Units a run is counted in ("after 4800 batch", "after a few epochs", "after a while").
const UNITS: &[&str] = &[
    "step",
    "steps",
    "iter",
    "iters",
    "iteration",
    "iterations",
    "epoch",
    "epochs",
    "epoches",
    "batch",
    "batches",
    "update",
    "updates",
    "round",
    "rounds",
    "hour",
    "hours",
    "minute",
    "minutes",
    "while",
    "period",
    "time",
];

/// How many, said without a number ("after a few epochs", "after several hundred iters").
const AMOUNTS: &[&str] = &[
    "few",
    "some",
    "several",
    "many",
    "certain",
    "couple",
    "number",
    "hundreds",
    "thousands",
    "dozens",
    "hundred",
    "thousand",
    "long",
    "more",
];

/// The evaluation as a time in the run (as a metric, "validation loss", it is no time).
const EVAL_WORDS: &[&str] = &[
    "eval",
    "evaluation",
    "evaluations",
    "evaluate",
    "evaluating",
    "validation",
    "validate",
    "validating",
];

/// Words that make "after N steps" say how long something has lasted ("still 0 after 300
/// steps", "doesn't decrease even after 23 epochs") rather than when it began.
const LASTING: &[&str] = &[
    "still", "even", "yet", "not", "no", "never", "t", "nothing", "cannot", "stays", "remains",
    "same",
];

/// Words that place what follows in time ("during validation", "when evaluating").
const AT: &[&str] = &[
    "during", "at", "in", "on", "when", "while", "upon", "before", "for", "trying", "to",
];

/// Words that may sit between a time word and what it counts ("after about 2k steps", "at the
/// start of", "during the first evaluation").
const FILLER: &[&str] = &[
    "a",
    "an",
    "the",
    "of",
    "about",
    "around",
    "approx",
    "approximately",
    "roughly",
    "nearly",
    "almost",
    "over",
    "than",
    "for",
    "training",
    "train",
    "first",
    "each",
    "every",
    "its",
    "my",
    "our",
    "k",
    "m",
];

/// A count as written: "4800", "15k", "2,000", "1.5k" (split on punctuation, so "2" and "000").
fn count(w: &str) -> bool {
    let digits = w.trim_end_matches(['k', 'm']);
    !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())
}

fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// The times in the run that `text` places the trouble at (none when it does not say).
pub(super) fn phases(text: &str) -> Vec<Phase> {
    let w = words(text);
    let is = |i: usize, set: &[&str]| w.get(i).is_some_and(|x| set.contains(&x.as_str()));
    // The next word that is not filler, from i on.
    let next = |mut i: usize| {
        while i < w.len() && FILLER.contains(&w[i].as_str()) {
            i += 1;
        }
        i
    };
    let mut out = Vec::new();
    let mut add = |p: Phase| {
        if !out.contains(&p) {
            out.push(p);
        }
    };
    for i in 0..w.len() {
        let word = w[i].as_str();
        match word {
            // "after 4800 batch", "after a few epochs"; not "still 0 after 300 steps" or "not
            // decreasing even after 23 epochs", which say how long it has lasted, not when it
            // began.
            "after" if !(i.saturating_sub(4)..i).any(|k| LASTING.contains(&w[k].as_str())) => {
                let mut j = next(i + 1);
                while j < w.len() && (count(&w[j]) || AMOUNTS.contains(&w[j].as_str())) {
                    j = next(j + 1);
                }
                if j > i + 1 && is(j, UNITS) || is(next(i + 1), &["while", "period"]) {
                    add(Phase::Later);
                }
            }
            // "at epoch 36", "at about step 1200", "around iteration 5000".
            "at" | "around" | "by" => {
                let j = next(i + 1);
                let n = w.get(j + 1).map(|n| n.trim_end_matches(['k', 'm']));
                if is(j, UNITS) && n.and_then(|n| n.parse::<u64>().ok()).is_some_and(|n| n > 1) {
                    add(Phase::Later);
                }
            }
            "midway" | "halfway" | "partway" => add(Phase::Later),
            "mid" if is(i + 1, &["run", "training", "epoch", "epochs"]) => add(Phase::Later),
            "middle" if is(next(i + 1), &["training", "epochs", "run"]) => add(Phase::Later),
            // "at the first step", "first-step", "from the first iteration".
            "first"
                if is(
                    i + 1,
                    &[
                        "step",
                        "steps",
                        "iteration",
                        "iter",
                        "forward",
                        "backward",
                        "batch",
                        "pass",
                    ],
                ) =>
            {
                add(Phase::Start)
            }
            // "step 0", "Step-0 loss".
            "step" if is(i + 1, &["0", "zero"]) => add(Phase::Start),
            "immediately" | "instantly" | "startup" => add(Phase::Start),
            "right" if is(i + 1, &["away"]) => add(Phase::Start),
            // "at the start", "from the start", "start-up".
            "start" | "beginning" | "outset"
                if (1..=2).any(|k| i >= k && matches!(w[i - k].as_str(), "at" | "from"))
                    || is(i + 1, &["up"]) =>
            {
                add(Phase::Start)
            }
            // "during evaluation", "when evaluating", "trying to validate", "the evaluation
            // loop", "trainer.evaluate".
            _ if EVAL_WORDS.contains(&word) => {
                let placed = (1..=3).any(|k| {
                    i >= k
                        && AT.contains(&w[i - k].as_str())
                        && (1..k).all(|m| FILLER.contains(&w[i - m].as_str()))
                });
                let as_time = is(
                    i + 1,
                    &["loop", "step", "phase", "stage", "starts", "started"],
                ) || (i > 0 && w[i - 1] == "trainer")
                    || matches!(word, "evaluating" | "validating" | "evaluate" | "validate");
                if placed || as_time {
                    add(Phase::Eval)
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{phases, Phase::*};

    #[test]
    fn times_in_the_run_are_read_from_queries_and_titles() {
        for (text, want) in [
            (
                "cuda runtime error: out of memory after 15K iteration of 4 GPUs",
                &[Later][..],
            ),
            (
                "However, after 4800 batch, it threw an error about out of memory.",
                &[Later],
            ),
            (
                "CUDA Out of Memory After Few Steps, memory usage starts off low",
                &[Later],
            ),
            (
                "loss becomes nan after training for ~2000 iterations",
                &[Later],
            ),
            ("the loss drastically goes up at about epoch 36", &[Later]),
            ("the loss drastically goes up at epoch 36", &[Later]),
            ("it diverges after a while", &[Later]),
            ("I found that the loss was still 0 after 300 steps.", &[]),
            (
                "the total loss doesn't decrease at all, even after training for 23 epochs",
                &[],
            ),
            (
                "During the first evaluation after training, an OOM error occurs.",
                &[Eval],
            ),
            (
                "Cuda out of memory when it trying to validate, after 5 epochs",
                &[Eval, Later],
            ),
            (
                "CUDA out of memory at the first step: weights do not fit",
                &[Start],
            ),
            (
                "OOM during evaluation: predictions accumulated on the GPU",
                &[Eval],
            ),
            ("GRPO loss is 0 (or tiny) from the first step", &[Start]),
            ("Step-0 loss should sit at ln V", &[Start]),
            ("Multi-GPU training hangs or is stuck at start-up", &[Start]),
            (
                "Reward suddenly collapses and outputs degenerate mid-run",
                &[Later],
            ),
            // A metric named for its split is no time in the run; nor is "after training".
            ("validation loss is higher than training loss", &[]),
            ("the evaluation results are bad after training", &[]),
            ("Memory grows every step until OOM", &[]),
            (
                "50-step EMA of the loss must fall over the first 200 steps",
                &[],
            ),
        ] {
            assert_eq!(phases(text), want, "{text}");
        }
    }
}
