//! `analyze_with`: klmirqd's independent-mode bandwidth servers charged as
//! top-priority interference on every core (rtgpu_analysis::server). Zero
//! overheads, so only the servers move the bounds; every number is derived
//! by hand in the comments.

use rtgpu_analysis::server::Server;
use rtgpu_analysis::workload::{analyze, analyze_with, Extra, Report, TaskVerdict, Verdict};

const MS: u64 = 1_000_000;

fn workload(scheduler: &str, cores: u32, tasks: &[(&str, u64, u64)], extra_policy: &str) -> String {
    let mut s = format!(
        "name = \"servers\"\n[platform]\ncores = {cores}\n[overheads]\nbase = \"zero\"\n\
         [policy]\ncpu_scheduler = \"{scheduler}\"\n{extra_policy}\n"
    );
    for (name, c, t) in tasks {
        s.push_str(&format!(
            "[[task]]\nname = \"{name}\"\nwcet = \"{c} us\"\nperiod = \"{t} us\"\n"
        ));
    }
    s
}

fn analyse(toml: &str, servers: &[Server]) -> Report {
    let w = rtgpu_model::parse_workload(toml, "t.toml").expect("valid workload");
    analyze_with(
        &w,
        &Extra {
            servers: servers.to_vec(),
            bottom_halves: None,
            ..Extra::default()
        },
    )
    .0
}

fn task<'a>(r: &'a Report, name: &str) -> &'a rtgpu_analysis::workload::TaskReport {
    r.tasks.iter().find(|t| t.name == name).expect("task")
}

#[test]
fn one_core_hand_computed() {
    // One core, τ: C = 2 ms, T = D = 10 ms; one server Q = 1 ms, T = 5 ms,
    // i.e. a top-priority sporadic task with C = 1, T = 5, J = 5 − 1 = 4:
    //   R = 2 + ⌈(R + 4)/5⌉·1 (ms)
    //   R0 = 2 + 1 = 3 → 2 + ⌈7/5⌉ = 4 → 2 + ⌈8/5⌉ = 4.
    // R = 4 ms: the server's budget at the end of its period just as τ is
    // released, and its next budget at once (back to back).
    let toml = workload("P-FP", 1, &[("tau", 2_000, 10_000)], "");
    let plain = analyse(&toml, &[]);
    assert_eq!(task(&plain, "tau").response_time, Some(2 * MS));
    assert!(plain.servers.is_empty());
    let r = analyse(&toml, &[Server::new(MS, 5 * MS)]);
    let t = task(&r, "tau");
    assert_eq!(t.response_time, Some(4 * MS));
    assert_eq!(t.pieces[0].response_time, Some(4 * MS));
    assert_eq!(t.verdict, TaskVerdict::MeetsDeadline);
    assert_eq!(r.verdict, Verdict::Schedulable);
    assert_eq!(r.servers, vec![Server::new(MS, 5 * MS)]);
    assert!(
        r.reason.contains("1 server(s) of 1 ms every 5 ms charged"),
        "{}",
        r.reason
    );
    assert!(r.notes.iter().any(|n| n.contains("charged on every core")));
    // analyze is analyze_with without servers.
    let w = rtgpu_model::parse_workload(&toml, "t.toml").unwrap();
    assert_eq!(analyze(&w).0, plain);
}

#[test]
fn two_servers_both_charged_on_the_core() {
    // Two GPUs' servers (1 ms every 5 ms each) may both run on τ's core:
    //   R = 2 + 2·⌈(R + 4)/5⌉: R0 = 4 → 2 + 2·2 = 6 → 2 + 2·2 = 6. R = 6 ms.
    let toml = workload("P-FP", 1, &[("tau", 2_000, 10_000)], "");
    let s = Server::new(MS, 5 * MS);
    let r = analyse(&toml, &[s, s]);
    assert_eq!(task(&r, "tau").response_time, Some(6 * MS));
}

#[test]
fn bound_grows_with_the_server_budget_until_unschedulable() {
    // τ = (2 ms, 10 ms) below a server of Q every 5 ms: the bound never
    // shrinks as Q grows. At Q = 4 ms: R = 2 + 4·⌈(R + 1)/5⌉:
    // R0 = 6 → 2 + 4·2 = 10 → 2 + 4·⌈11/5⌉ = 14 > 10: a miss.
    let toml = workload("P-FP", 1, &[("tau", 2_000, 10_000)], "");
    let mut last = 0;
    let mut missed_at = None;
    for q in (0..=5 * MS).step_by(250_000) {
        let r = analyse(&toml, &[Server::new(q, 5 * MS)]);
        match task(&r, "tau").response_time {
            Some(b) => {
                assert!(missed_at.is_none(), "schedulable again at Q = {q}");
                assert!(b >= last, "Q = {q}: {b} < {last}");
                last = b;
            }
            None => {
                missed_at.get_or_insert(q);
                assert_eq!(r.verdict, Verdict::NotSchedulable);
                assert!(r.reason.contains("fail with 1 server(s)"), "{}", r.reason);
            }
        }
    }
    assert!(missed_at.is_some_and(|q| q <= 4 * MS), "{missed_at:?}");
}

#[test]
fn global_fp_charges_the_servers() {
    // G-FP on one core: Bertogna & Cirinei's workload bound with R = T for
    // the server, W(L) = N + min(1, L + 4 − 5N), N = ⌊(L + 4)/5⌋ (ms):
    // L = 2: W = 2, min(2, 1) → 3; L = 3: W = 2 → 4; L = 4: W = 2 → 4.
    let toml = workload("G-FP", 1, &[("tau", 2_000, 10_000)], "");
    let r = analyse(&toml, &[Server::new(MS, 5 * MS)]);
    assert_eq!(task(&r, "tau").response_time, Some(4 * MS));
    assert_eq!(r.servers.len(), 1);
}

/// Under EDF the servers are not charged, so no bound is claimed: a task
/// of 65 % beside a server of 48 % on one core has tardiness 0 alone but
/// is overloaded beside it (the simulator's responses grow without bound).
#[test]
fn edf_gives_no_bound_beside_servers() {
    let toml = workload("G-EDF", 1, &[("tau", 6_500, 10_000)], "");
    let plain = analyse(&toml, &[]);
    assert_eq!(plain.verdict, Verdict::Schedulable, "{}", plain.reason);
    assert_eq!(task(&plain, "tau").tardiness, Some(0));
    let r = analyse(&toml, &[Server::new(4_800_000, 10 * MS)]);
    assert!(r.servers.is_empty());
    assert_eq!(r.verdict, Verdict::NotSchedulable);
    assert!(r.reason.contains("no bound under G-EDF"), "{}", r.reason);
    assert!(r.notes.iter().any(|n| n.contains("no bound is given")));
    let tau = task(&r, "tau");
    assert_eq!((tau.response_time, tau.tardiness), (None, None));
    assert_eq!(tau.verdict, TaskVerdict::NotAnalysed);
}

#[test]
fn split_budgets_leave_room_for_the_server() {
    // Three tasks (6 ms, 10 ms) on two cores under PDMS_HPTS_DS and a
    // server of 0.5 ms every 10 ms (C = 0.5, T = 10, J = 9.5), which the
    // partitioner charges on every core (in ms):
    // - core 0: a, R = 6 + 0.5·⌈(R + 9.5)/10⌉ → 6.5 → 7 → 7; b below it
    //   misses. HPTaskSplit removes a; b alone: R = 7. MaximalSplit of a
    //   over {b}: b needs 6 + 0.5·⌈(t + 9.5)/10⌉ + ⌈t/10⌉·C' ≤ t for some
    //   t ≤ 10; t = 10: 7 + C' ≤ 10, C' = 3. a' = 3 below the server:
    //   R' = 3 + 0.5·⌈(R' + 9.5)/10⌉ → 3.5 → 4 → 4; the remainder 3 in
    //   10 − 4 = 6 alone below the server: 4 ≤ 6, fine. Removed 0.6 <
    //   0.6 + 0.3: split. Core 0 = [a' (3), b]: b = 6 + 3 + 0.5·⌈19.5/10⌉
    //   = 10 ≤ 10.
    // - a'' = (3, 10, D 10 − R' = 6), released R' = 4 after the job
    //   (seed 003 §III.B). Core 1: c (R 7), then a'' on top (D 6): R = 4;
    //   c: 6 + 3 + 0.5·⌈(w + 9.5)/10⌉: 9.5 → 10 → 10 ≤ 10.
    // a's job: 4 + 4 = 8 ms, and no release jitter (a'' is released when
    // a' has surely finished). Without the server the split is 4 + 2 as
    // in rtgpu_analysis::partition's `first_fit_fails_ds_splits`; a
    // partition that did not see the server made b miss (6 + 4 + 1 > 10).
    let toml = workload(
        "P-FP",
        2,
        &[
            ("a", 6_000, 10_000),
            ("b", 6_000, 10_000),
            ("c", 6_000, 10_000),
        ],
        "partitioning = \"pdms-hpts-ds\"",
    );
    let plain = analyse(&toml, &[]);
    assert_eq!(plain.verdict, Verdict::Schedulable);
    let pieces = |r: &Report| {
        task(r, "a")
            .pieces
            .iter()
            .map(|p| (p.core, p.budget, p.release_offset, p.response_time))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        pieces(&plain),
        vec![
            (0, 4 * MS, 0, Some(4 * MS)),
            (1, 2 * MS, 4 * MS, Some(2 * MS))
        ]
    );
    let r = analyse(&toml, &[Server::new(MS / 2, 10 * MS)]);
    assert_eq!(r.verdict, Verdict::Schedulable, "{}", r.reason);
    assert_eq!(
        pieces(&r),
        vec![
            (0, 3 * MS, 0, Some(4 * MS)),
            (1, 3 * MS, 4 * MS, Some(4 * MS))
        ]
    );
    let a = task(&r, "a");
    assert_eq!(a.response_time, Some(8 * MS));
    assert_eq!(a.pieces[1].deadline, 6 * MS);
    for (name, core) in [("b", 0), ("c", 1)] {
        let t = task(&r, name);
        assert_eq!(t.cores, vec![core]);
        assert_eq!(t.response_time, Some(10 * MS), "{name}");
        assert_eq!(t.verdict, TaskVerdict::MeetsDeadline);
    }
    // A bigger server (1 ms every 5 ms: 0.2 of each core, 2.2 in all) leaves
    // no placement for every task: not schedulable, and the report names
    // the task that fits nowhere with the servers named.
    let r = analyse(&toml, &[Server::new(MS, 5 * MS)]);
    assert_eq!(r.verdict, Verdict::NotSchedulable);
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("fits on none of the cores left below 1 server(s)")),
        "{:?}",
        r.notes
    );
}

#[test]
fn a_server_too_big_for_any_core_is_reported() {
    // τ = (2 ms, 10 ms) on four cores below a server of 9 ms every 10 ms
    // (J = 1 ms): R = 2 + 9·⌈(R + 1)/10⌉ → 11 → 2 + 9·2 = 20 > 10. No core
    // can take τ, however many: the partitioner reports it infeasible, with
    // the server in the reason.
    let toml = workload("P-FP", 4, &[("tau", 2_000, 10_000)], "");
    let r = analyse(&toml, &[Server::new(9 * MS, 10 * MS)]);
    assert_eq!(r.verdict, Verdict::NotSchedulable);
    let t = task(&r, "tau");
    assert_eq!(t.verdict, TaskVerdict::Unplaced);
    assert!(t.pieces.is_empty());
    assert!(
        r.notes.iter().any(|n| n.contains(
            "could not place 1 task(s): tau: misses its deadline even alone on a core below \
             1 server(s) of 9 ms every 10 ms"
        )),
        "{:?}",
        r.notes
    );
    // Under first fit likewise.
    let toml = workload(
        "P-FP",
        4,
        &[("tau", 2_000, 10_000)],
        "partitioning = \"first-fit\"",
    );
    let r = analyse(&toml, &[Server::new(9 * MS, 10 * MS)]);
    assert_eq!(task(&r, "tau").verdict, TaskVerdict::Unplaced);
}

/// One GPU on two cores, G-FP, zero overheads but a 30 us bottom half,
/// klmirqd interrupts; `rest` adds the vGPUs and tasks.
fn klmirqd_on_one_gpu(rest: &str) -> rtgpu_model::Workload {
    let toml = format!(
        "name = \"independent\"\n[platform]\ncores = 2\ngpus = 1\n[overheads]\n\
         base = \"zero\"\nbh = \"30 us\"\n[policy]\ncpu_scheduler = \"G-FP\"\n\
         gpu_allocator = \"static\"\ninterrupts = \"klmirqd\"\n{rest}"
    );
    rtgpu_model::parse_workload(&toml, "t.toml").expect("valid workload")
}

/// `w` analysed with one server `s`, charged as the bottom halves' server
/// too when `bottom_halves`.
fn with_server(w: &rtgpu_model::Workload, s: Server, bottom_halves: bool) -> Report {
    analyze_with(
        w,
        &Extra {
            servers: vec![s],
            bottom_halves: bottom_halves.then_some(s),
            ..Extra::default()
        },
    )
    .0
}

/// klmirqd's independent mode (`Extra::bottom_halves`): every GPU hold is
/// charged the bottom-half server's latency per interrupt, in the holder's
/// own GPU time and where its hold blocks the other task.
#[test]
fn independent_bottom_halves_charge_the_server_latency() {
    // Two tasks share one GPU (static queue, rho = 2 tokens), one 2 ms
    // kernel and one interrupt each, bh = 30 us. Server Q = 100 us,
    // T = 1 ms. Backlog: one bh per concurrent owner, min(2 tasks, rho 2)
    // = 60 us; latency (⌈60/100⌉ + 1)·1 ms = 2 ms; per interrupt beyond
    // the bh the hold counts: 2 ms − 30 us = 1.97 ms.
    let tasks = r#"
[[task]]
name = "a"
wcet = "1 ms"
period = "20 ms"
gpu = { kernels = ["2 ms"], interrupts = 1 }
[[task]]
name = "b"
wcet = "1 ms"
period = "20 ms"
gpu = { kernels = ["2 ms"], interrupts = 1 }
"#;
    let w = klmirqd_on_one_gpu(tasks);
    let s = Server::new(100_000, MS);
    let dependent = with_server(&w, s, false);
    let independent = with_server(&w, s, true);
    assert_eq!(independent.bottom_halves, Some(s));
    assert_eq!(dependent.bottom_halves, None);
    let wait = 2 * MS - 30_000;
    for name in ["a", "b"] {
        let d = task(&dependent, name).gpu.clone().expect("gpu");
        let i = task(&independent, name).gpu.clone().expect("gpu");
        // G-FP charges no dependent-mode stretch (the waiter argument).
        assert_eq!(d.hold_stretch, None);
        assert_eq!(i.hold_stretch, Some(wait));
        assert_eq!(i.bottom_half_wait, Some(wait));
        // The other task's hold, stretched, is what this one waits for.
        let (db, ib) = (
            d.token_blocking.expect("bounded"),
            i.token_blocking.expect("bounded"),
        );
        assert_eq!(ib, db + wait, "{name}");
        // Its own GPU time grows by its own wait, its response bound by
        // both, less what only the dependent mode's shared bottom-half
        // thread (ρ = 2) costs the suspension-aware test: a Δbh for each
        // of the other task's interrupts in its window (H = ⌈(20 + 20)/20⌉
        // = 2, seed 000 Eq. 11) and the co-holder's Δbh before its own one
        // operation, 90 us.
        let (dr, ir) = (
            task(&dependent, name).response_time.expect("bounded"),
            task(&independent, name).response_time.expect("bounded"),
        );
        assert!(ir + 90_000 >= dr + 2 * wait, "{name}: {dr} -> {ir}");
    }
    assert!(independent.notes.iter().any(|n| n
        .contains("klmirqd independent: every GPU's bottom halves run in a server")
        && n.contains("1.97 ms")));
    // Outside klmirqd the server is not a bottom-half server.
    let mut slih = w.clone();
    slih.policy.interrupts = rtgpu_model::InterruptHandling::Slih;
    assert_eq!(with_server(&slih, s, true).bottom_halves, None);
}

/// vGPU members in klmirqd's independent mode: their bound has no term for
/// the server's latency between kernels, so it is reported unbounded.
#[test]
fn independent_bottom_halves_leave_vgpu_members_unbounded() {
    let w = klmirqd_on_one_gpu(
        r#"
[[vgpu]]
name = "v"
budget = "4 ms"
period = "4 ms"
[[task]]
name = "a"
wcet = "1 ms"
period = "50 ms"
gpu = { kernels = ["2 ms"], vgpu = "v" }
"#,
    );
    let s = Server::new(100_000, MS);
    assert!(task(&with_server(&w, s, false), "a")
        .response_time
        .is_some());
    let independent = with_server(&w, s, true);
    let g = task(&independent, "a").gpu.clone().expect("gpu");
    assert!(g
        .unbounded_because
        .as_deref()
        .is_some_and(|w| w.contains("klmirqd independent mode")));
    assert_eq!(task(&independent, "a").response_time, None);
    assert_eq!(independent.verdict, Verdict::NotSchedulable);
}
