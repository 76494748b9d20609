//! Every user-facing string of the TUI, in one place (gitui's habit): wording changes and
//! translations touch only this file.

pub const APP: &str = "mltriage";
pub const TOO_SMALL: &str = "terminal too small";
pub const TOO_SMALL_NEED: &str = "need at least 40×10";

pub const TREES: &str = "Trees";
pub const CATALOG: &str = "Catalog";
pub const FINDINGS: &str = "Findings";
pub const NO_RUN_ATTACHED: &str =
    "no run attached — start with `mltriage RUN` to let probes answer";
pub const LOADING_RUN: &str = "reading the run…";
pub const NO_FINDINGS: &str = "no findings (no implemented probe had anything to say)";

pub const SEARCH: &str = "Search";
pub const SEARCH_HINT: &str = "type a symptom or an error message";
pub const MODE_TEXT: &str = "full-text";
pub const MODE_FUZZY: &str = "fuzzy id/title";
pub const ALL_DOMAINS: &str = "all domains";
pub const RESULTS: &str = "Results";
pub const NO_RESULTS: &str = "no entries match; try other words, or Tab for the fuzzy filter";
pub const NO_CONFIDENT_MATCH: &str =
    "no confident match: the closest entries below; add your own with --playbook DIR";
/// Under "no confident match": where to look instead.
pub const BROWSE_CATALOG_HINT: &str = "Esc: browse the catalog by domain on the home screen";

pub const SYMPTOM: &str = "Symptom";
pub const CAUSE: &str = "Cause";
pub const FIX: &str = "Fix";
/// The conclusion view's heading over what the run's probes measured for the entry.
pub const EVIDENCE: &str = "Evidence in this run";
pub const KNOBS: &str = "Knobs";
pub const QUESTION: &str = "Question";
pub const THRESHOLD: &str = "Threshold";
pub const REFS: &str = "References";
pub const SEE_ALSO: &str = "See also";
pub const ERRORS: &str = "Error messages";
pub const PROBES: &str = "Probes";
pub const CHECK_RESULTS: &str = "Check on the attached run";

pub const WALK: &str = "Walk";
pub const PROBE_RUNNING: &str = "probe running";
pub const TENSOR_PASS: &str = "reading tensors";
pub const MEASURED: &str = "measured";
pub const EXPECTED: &str = "expected";
pub const PROPOSED: &str = "proposed branch";
pub const ANSWER: &str = "answer";
pub const LEADS_TO: &str = "→";
pub const PICK_BRANCH: &str = "Pick a branch";
pub const PICK_OPTION: &str = "What matches?";
pub const FACT_PROMPT: &str =
    "This node needs a fact the run does not state. Type its value, Enter:";
pub const CONCLUSION: &str = "Conclusion";
pub const CONFIRM_HINT: &str = "Enter confirm · o override · b back";

pub const RUN: &str = "Run";
pub const NO_SERIES: &str = "not logged";
pub const ANOMALY: &str = "anomaly";
pub const BAND: &str = "band";
pub const WEIGHTS: &str = "Weights";
pub const NO_TENSORS: &str = "no tensors to show";
pub const NO_CHECKPOINT: &str = "no checkpoint weights in this run";
pub const READING_TENSORS: &str = "reading the checkpoint tensors…";
pub const NO_HIST: &str = "no histogram for this tensor";
pub const COMPUTING_HIST: &str = "computing the histogram…";
pub const NO_FINITE: &str = "no finite values to bin";
pub const EMPTY_TENSOR: &str = "empty tensor (0 elements)";
pub const FACTS: &str = "facts";
pub const SERIES: &str = "Series";
pub const SERIES_FILTER: &str = "type to filter · Enter draw · Esc close · ctrl-u clear";
pub const NO_SERIES_MATCH: &str = "no series matches";
pub const SERIES_NONE: &str = "the run logs no series";
pub const BAND_START: &str = "start";
pub const BAND_FIRST_STEP: &str = "first step";
pub const BAND_ROLLING: &str = "rolling mean";
pub const SPIKE: &str = "spike";
pub const ZERO: &str = "zero";
pub const SCALE_LOG: &str = "log";
pub const SCALE_LINEAR: &str = "lin";
pub const LAST: &str = "last";

pub const WALK_FROM_STARTED: &str = "walking from";
pub const NOTHING_TO_WALK_FROM: &str = "nothing selected to walk from";
pub const ROUTE_ABOVE: &str = "step(s) above, on the way to";
pub const ROUTE_EXPAND: &str = "Tab expands";
pub const ROUTE_COLLAPSE: &str = "Tab collapses";
pub const PATH: &str = "Path";
pub const CHART_READING: &str = "reading the data for the chart…";
pub const ROWS_TITLE: &str = "label-mask fraction per row";
pub const ROWS_PAD: &str = "pad";
pub const HINT_TITLE: &str = "Getting started";
pub const HINT_LINES: [&str; 7] = [
    "mltriage finds what is wrong with a training run.",
    "",
    "/        search a symptom or an error message (e.g. grad norm spikes)",
    "w        walk from here: step down the tree from a hit or an entry",
    ":walk    walk a tree from the top (:walk stability)",
    "mltriage RUN   attach a run: probes answer, findings open first",
    "?        every key    Esc closes this; any other key closes it and acts",
];

pub const HELP: &str = "Keys";
pub const HELP_FILTER: &str = "filter";
pub const PALETTE: &str = "Command";

pub const EXPORTED: &str = "transcript written to";
pub const EXPORT_FAILED: &str = "could not write the transcript:";
pub const CANCELLED: &str = "probe cancelled — pick a branch with o";
pub const CHECK_DONE: &str = "findings from its probes (at the top; Enter walks from one)";
pub const CHECKING: &str = "running probes";
pub const NO_SUCH_ENTRY: &str = "no entry";
pub const NO_SUCH_TREE: &str = "no tree";
pub const NO_RUN: &str = "no run attached: start `mltriage RUN` to check one";
pub const NO_RUN_FOR_PROBE: &str = "no run attached: the probe cannot answer — pick a branch (o)";
pub const NO_PROBE: &str = "this node has no probe — pick a branch (o)";
pub const NO_PROBE_FOR: &str = "no probe answers";
pub const WAIT_PROBE: &str = "the probe is still running (Esc cancels)";
pub const BRANCH_MISSING: &str = "the proposed branch leads nowhere here — pick one";
pub const AT_ROOT: &str = "already at the first question";
pub const NOTHING_TO_EXPORT: &str = "start a walk first (`:walk stability`)";
pub const USAGE_WALK: &str = "usage: :walk TREE";
pub const USAGE_SHOW: &str = "usage: :show ID";
pub const USAGE_EXPORT: &str = "usage: :export md|json [PATH]";
pub const USAGE_FACT: &str = "usage: :fact key=value";
pub const FACT_SET: &str = "fact set:";
pub const UNKNOWN_COMMAND: &str = "unknown command";

/// Descriptions of actions for the help overlay.
pub fn action_help(name: &str) -> &'static str {
    match name {
        "quit" => "quit (Ctrl-C always quits)",
        "back" => "back / close / cancel a running probe",
        "up" => "move up",
        "down" => "move down",
        "top" => "go to the top",
        "bottom" => "go to the bottom",
        "page_up" => "page up",
        "page_down" => "page down",
        "select" => "open / confirm",
        "next_pane" => "next pane (search: toggle fuzzy filter)",
        "search" => "search the catalog",
        "help" => "this help",
        "palette" => "command palette (:walk stability, :export md, :quit)",
        "run" => "run screen: charts, weight histograms and findings",
        "home" => "home screen",
        "check" => "check: run the probes (entry: this entry's probes)",
        "override" => "walk: override the proposed branch",
        "walk_back" => "walk: back one question",
        "export_md" => "walk: export the transcript as Markdown",
        "export_json" => "walk: export the transcript as JSON",
        "toggle_fuzzy" => "search: toggle the fuzzy id/title filter",
        "domain" => "search: cycle the domain filter (ctrl-d while typing)",
        "walk_from" => "walk from here: start the tree walk at this symptom (search: ctrl-w; in a walk: go where the run's answers lead)",
        "series" => "run: chart any series the run logs (type to filter, Enter draws it)",
        "log_scale" => "run: y scale of the charts: auto → log → linear",
        "follow" => "follow the run while it trains: pause / resume",
        _ => "",
    }
}

// Words for the walk, the help, the palette and the run header (issues 27 and 30).
pub const NO_RESULTS_FUZZY: &str =
    "no id or title matches; try fewer letters, or Tab for the full-text search";
pub const SEARCH_KEPT: &str = "your last query is kept: type to refine it, ctrl-u clears it";
pub const DID_YOU_MEAN: &str = "did you mean";
pub const SCROLL_HINT: &str = "j/k scroll";
pub const MORE_BELOW: &str = "more below";
pub const RUN_ONE_FILE: &str =
    "a single file with no logged steps or checkpoints: attach the run's folder (its output_dir)";
pub const NO_STEPS: &str = "no steps logged";
pub const RUN_SAYS: &str = "the run says";
pub const ROUTE_TAKES: &str = "the route to the start takes";
pub const RUN_LEADS: &str = "the run's answers lead to";
pub const RUN_LEADS_KEY: &str = "w walks there";
pub const SKIPPED_STOP: &str =
    "the probe could not measure this node: it does not conclude — pick the branch that matches (o), or give what it lacks";
pub const FACT_RERUN: &str = "nodes that use this fact were asked again:";
pub const RUN_SAID: &str = "run said";
pub const RUN_LEADS_NOWHERE: &str =
    "the run's answers agree with this walk (nothing above leads elsewhere)";

// Follow mode (issue 31): the header and status words.
pub const FOLLOW_MARK: &str = "following";
pub const FOLLOW_WAITING_MARK: &str = "follow";
pub const FOLLOW_PAUSED_MARK: &str = "follow paused (F)";
pub const FOLLOW_QUIET: &str = "no new step for";
pub const FOLLOW_CHANGED: &str = "findings changed";
pub const FOLLOW_PAUSED: &str = "follow paused: F resumes";
pub const FOLLOW_RESUMED: &str = "following the run again";
pub const FOLLOW_UNAVAILABLE: &str = "follow: no run attached";
