//! Cost of the OS sandbox per shell call: `true` and `echo` run plainly
//! (`sandbox: none`, the same code path without a sandbox), in bubblewrap
//! and under Landlock, with a workspace holding the engine's usual carve-outs
//! (some missing, so placeholders are made and removed on every call).
//! Prints p50 and p95 wall time of each (target: bwrap p50 <= 15 ms) and the
//! CPU time per call of this process and its children (which does not depend
//! on what else the machine runs), then criterion.
//! `cargo bench --bench sandbox`; under `cargo test --benches` a short smoke run.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use routines::sandbox::{Sandbox, SandboxMode, SandboxPolicy};
use tokio::runtime::Runtime;

fn workspace(dir: &Path) -> SandboxPolicy {
    let ws = dir.join("ws");
    for d in ["routines", ".routines", ".git/hooks", "src"] {
        std::fs::create_dir_all(ws.join(d)).unwrap();
    }
    std::fs::write(ws.join("routines.yaml"), "timezone: UTC\n").unwrap();
    std::fs::write(ws.join(".git/config"), "[core]\n").unwrap();
    let mut policy = SandboxPolicy::new(&ws);
    policy.read_only =
        ["routines.yaml", "routines", ".routines", ".git/config", ".git/hooks", "AGENT.md", "HEARTBEAT.md"]
            .iter()
            .map(|p| ws.join(p))
            .collect();
    policy.hidden.push("/etc/shadow".into());
    policy.env = vec![("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()), ("LANG".into(), "C.UTF-8".into())];
    policy
}

/// The sandboxes that work here, by name.
fn sandboxes() -> Vec<(&'static str, Sandbox)> {
    let mut out = vec![("plain", Sandbox::none())];
    for (name, mode) in [("bwrap", SandboxMode::Bwrap), ("landlock", SandboxMode::Landlock)] {
        match Sandbox::detect(mode) {
            Ok(sandbox) => out.push((name, sandbox)),
            Err(e) => println!("{name}: skipped: {e}"),
        }
    }
    out
}

fn call(rt: &Runtime, sandbox: &Sandbox, policy: &SandboxPolicy, argv: &[String]) {
    let output = rt.block_on(sandbox.command(policy, argv).unwrap().output()).unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    black_box(output);
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// CPU time used so far by this process and its reaped descendants (load-independent).
fn cpu() -> Duration {
    let usage = |who| {
        let mut u = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: getrusage fills the struct.
        unsafe { libc::getrusage(who, u.as_mut_ptr()) };
        // SAFETY: zero-initialized and filled above.
        let u = unsafe { u.assume_init() };
        let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
        tv(u.ru_utime) + tv(u.ru_stime)
    };
    usage(libc::RUSAGE_SELF) + usage(libc::RUSAGE_CHILDREN)
}

fn percentiles(rt: &Runtime, policy: &SandboxPolicy, n: usize) {
    let commands: [(&str, Vec<String>); 2] =
        [("true", vec!["true".into()]), ("echo", vec!["echo".into(), "hello".into()])];
    for (name, sandbox) in sandboxes() {
        // Preparing alone: resolving the policy, the placeholder registry, the arguments or ruleset.
        let (start, start_cpu) = (Instant::now(), cpu());
        for _ in 0..n {
            black_box(sandbox.command(policy, &commands[0].1).unwrap());
        }
        let per = |d: Duration| ms(d) / n as f64;
        println!(
            "prep {name:<8} over {n} calls: mean {:.2} ms wall, {:.2} ms CPU",
            per(start.elapsed()),
            per(cpu() - start_cpu)
        );
        // `true` again with the process cap of the shell tool (a `pids` cgroup per call, where
        // this machine lets the engine make one).
        let capped = SandboxPolicy { max_processes: Some(512), ..policy.clone() };
        let runs = [
            (commands[0].0, &commands[0].1, policy),
            (commands[1].0, &commands[1].1, policy),
            ("true+cap", &commands[0].1, &capped),
        ];
        for (label, argv, policy) in runs {
            call(rt, &sandbox, policy, argv);
            let start_cpu = cpu();
            let mut times: Vec<Duration> = (0..n)
                .map(|_| {
                    let start = Instant::now();
                    call(rt, &sandbox, policy, argv);
                    start.elapsed()
                })
                .collect();
            times.sort();
            let at = |q: f64| times[((times.len() as f64 - 1.0) * q).round() as usize];
            let cpu_per_call = ms(cpu() - start_cpu) / n as f64;
            println!(
                "{label:>8} {name:<8} over {n} calls: p50 {:.2} ms  p95 {:.2} ms  max {:.2} ms  CPU {cpu_per_call:.2} ms/call{}",
                ms(at(0.5)),
                ms(at(0.95)),
                ms(times[times.len() - 1]),
                if name == "bwrap" { "  (target: p50 <= 15 ms)" } else { "" }
            );
        }
    }
}

/// The whole `shell` tool call, as the agent makes it: parsing the command line with the
/// command rules, the forbidden-path check, the sandbox, the child's pipes, its process group
/// and the wait for the namespace to end.
fn shell_tool(rt: &Runtime, policy: &SandboxPolicy, n: usize) {
    use routines::config::{Autonomy, Language};
    use routines::tools::{AgentFacts, Shell, ShellArgs, ShellSandbox, ShellSettings, Tool, ToolContext, safe_env};
    for (name, sandbox) in sandboxes() {
        let ctx = ToolContext {
            workspace: policy.cwd.clone(),
            policy: std::sync::Arc::new(routines::policy::Policy::new(Autonomy::Full, &policy.cwd, &[]).unwrap()),
            memory: None,
            language: Language::En,
            facts: AgentFacts::default(),
            redactor: Default::default(),
            shell: ShellSettings {
                timeout: Duration::from_secs(30),
                env: safe_env(None, &[]),
                sandbox: ShellSandbox::Ready {
                    sandbox,
                    read_only: policy.read_only.clone(),
                    hidden: policy.hidden.clone(),
                    network: false,
                },
                max_processes: routines::config::DEFAULT_SHELL_MAX_PROCESSES.get(),
            },
            read_roots: std::sync::Arc::new([]),
        };
        let one = || {
            let out = rt.block_on(Shell.call(ShellArgs { command: "echo hello".into() }, &ctx)).unwrap();
            assert_eq!(out.trim(), "hello");
        };
        one();
        let start_cpu = cpu();
        let mut times: Vec<Duration> = (0..n)
            .map(|_| {
                let start = Instant::now();
                one();
                start.elapsed()
            })
            .collect();
        times.sort();
        let at = |q: f64| times[((times.len() as f64 - 1.0) * q).round() as usize];
        println!(
            "shell tool `echo hello` {name:<8} over {n} calls: p50 {:.2} ms  p95 {:.2} ms  CPU {:.2} ms/call{}",
            ms(at(0.5)),
            ms(at(0.95)),
            ms(cpu() - start_cpu) / n as f64,
            if name == "bwrap" { "  (target: p50 <= 15 ms)" } else { "" }
        );
    }
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let policy = workspace(&dir.path().canonicalize().unwrap());
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let argv = vec!["true".to_string()];
    for (name, sandbox) in sandboxes() {
        c.bench_function(&format!("true {name}"), |b| b.iter(|| call(&rt, &sandbox, &policy, &argv)));
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = bench
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let dir = tempfile::tempdir().unwrap();
    let policy = workspace(&dir.path().canonicalize().unwrap());
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    percentiles(&rt, &policy, if full { 300 } else { 5 });
    shell_tool(&rt, &policy, if full { 300 } else { 5 });
    if full {
        benches();
        Criterion::default().configure_from_args().final_summary();
    }
}
