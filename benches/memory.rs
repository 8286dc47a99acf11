//! Recall latency with a large memory.
//!
//! `cargo bench --bench memory` stores 100,000 memories of varied, generated
//! text (deterministic: a fixed word list plus generated words, drawn with a
//! simple LCG on a Zipf-like curve), prints p50/p90/p99/max of `recall` over
//! 1,000 varied queries timed with `Instant`, then runs the criterion
//! benchmarks. Without `--bench` (e.g. `cargo test --benches`) it runs a
//! small smoke version of the same code.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;
use routines::memory::{CONVERSATION, CORE, DAILY, Memory, query};
use routines::store::Store;

/// Everyday words a personal assistant's memory would hold, roughly most
/// common first.
const REAL: &str = "user meeting project time week today tomorrow work call email team report deadline \
     morning evening friday monday home family coffee lunch dinner travel flight train \
     hotel berlin lisbon london paris doctor dentist appointment birthday gift wife \
     husband daughter son mother father friend colleague manager client invoice budget \
     payment bank account password server deploy release bug issue review code database \
     backup laptop phone battery charger book article podcast music concert ticket movie \
     series recipe pasta pizza vegetarian allergy peanuts gym running yoga swimming bike \
     car insurance rent landlord apartment kitchen garden plants water weather rain snow \
     sunny holiday vacation spain italy japan tokyo language spanish german french lesson \
     course exam school teacher homework kids dog cat vet food groceries milk bread eggs \
     cheese wine beer tea sugar preference likes dislikes prefers favourite reminder \
     remember important urgent weekly monthly quarterly annual plan goal habit sleep \
     health medicine pharmacy prescription blood pressure results salary tax return form \
     office remote commute bus station airport passport visa embassy contract lawyer \
     signature document scan printer calendar schedule standup retro sprint roadmap \
     feature customer feedback survey design mockup presentation slides conference talk \
     speaker newsletter subscription renewal cancel refund order delivery package courier \
     address postcode neighbour party wedding anniversary restaurant reservation table \
     menu cafe bakery market museum exhibition gallery hiking mountain beach lake camping \
     tent backpack shoes jacket size color blue green red black white piano guitar violin \
     practice chess tournament score football match season league stocks portfolio crypto \
     savings mortgage loan interest rate electricity heating repair plumber electrician \
     quote estimate timezone utc cet pst";

/// Function words mixed into generated text (indexed, but never searched).
const FUNCTION: &str = "the a to and of in on for with at is was be it that this my their about from by \
     after before needs should will has said asked wants";

const SYLLABLES: &str = "ka lo mi ter van zu bri dol fen gar hu jin kel mar nor pel qui ros sam tol ur vel \
     wen xi yor zan";

/// Deterministic 64-bit LCG (Knuth's MMIX constants).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 11
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn unit(&mut self) -> f64 {
        (self.next() as f64) / ((1u64 << 53) as f64)
    }
}

/// Content vocabulary (real words first, then generated ones) with a
/// cumulative Zipf(s = 1) distribution over it.
struct Vocab {
    words: Vec<String>,
    cumulative: Vec<f64>,
}

impl Vocab {
    fn new(generated: usize, rng: &mut Lcg) -> Vocab {
        let mut words: Vec<String> = REAL.split_whitespace().map(str::to_string).collect();
        let mut seen: std::collections::HashSet<String> = words.iter().cloned().collect();
        let syllables: Vec<&str> = SYLLABLES.split_whitespace().collect();
        let target = words.len() + generated;
        while words.len() < target {
            let n = 2 + rng.below(3);
            let w: String = (0..n).map(|_| syllables[rng.below(syllables.len())]).collect();
            if seen.insert(w.clone()) {
                words.push(w);
            }
        }
        let mut total = 0.0;
        let cumulative = (1..=words.len())
            .map(|rank| {
                total += 1.0 / rank as f64;
                total
            })
            .collect();
        Vocab { words, cumulative }
    }

    fn zipf<'a>(&'a self, rng: &mut Lcg) -> &'a str {
        let total = self.cumulative.last().copied().unwrap_or(1.0);
        let target = rng.unit() * total;
        let i = self.cumulative.partition_point(|&c| c < target);
        &self.words[i.min(self.words.len() - 1)]
    }

    fn uniform<'a>(&'a self, rng: &mut Lcg) -> &'a str {
        &self.words[rng.below(self.words.len())]
    }
}

fn memories(n: usize, vocab: &Vocab, rng: &mut Lcg) -> Vec<(String, String, &'static str)> {
    let function: Vec<&str> = FUNCTION.split_whitespace().collect();
    (0..n)
        .map(|i| {
            let len = 6 + rng.below(35);
            let mut text: Vec<String> = Vec::with_capacity(len);
            for j in 0..len {
                if rng.below(100) < 35 {
                    text.push(function[rng.below(function.len())].to_string());
                } else {
                    text.push(vocab.zipf(rng).to_string());
                }
                if j % 9 == 8 {
                    if let Some(last) = text.last_mut() {
                        last.push('.');
                    }
                }
            }
            let key = format!("{}.{}.{i}", vocab.zipf(rng), vocab.uniform(rng));
            let category = match rng.below(10) {
                0..=2 => CORE,
                3..=7 => DAILY,
                _ => CONVERSATION,
            };
            (key, text.join(" "), category)
        })
        .collect()
}

/// Varied queries: questions, keyword lists, rare and common words,
/// punctuation and FTS5 operators.
fn queries(n: usize, vocab: &Vocab, rng: &mut Lcg) -> Vec<String> {
    (0..n)
        .map(|_| {
            let words = 1 + rng.below(6);
            let mut q: Vec<String> = Vec::new();
            if rng.below(3) == 0 {
                q.push(["what", "when is", "does the user", "who is"][rng.below(4)].to_string());
            }
            for _ in 0..words {
                let w = if rng.below(2) == 0 { vocab.zipf(rng) } else { vocab.uniform(rng) };
                q.push(w.to_string());
            }
            let mut q = q.join(" ");
            match rng.below(8) {
                0 => q.push('?'),
                1 => q = format!("\"{q}\""),
                2 => q.push_str(" AND NOT (x*)"),
                _ => {}
            }
            q
        })
        .collect()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (n_memories, n_queries) = if full { (100_000, 1_000) } else { (2_000, 50) };

    // MEMORY_BENCH_DB=path keeps the generated database for inspection.
    let dir = tempfile::tempdir().unwrap();
    let path = std::env::var_os("MEMORY_BENCH_DB")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| dir.path().join("bench.db"));
    let _ = std::fs::remove_file(&path);
    let store = Store::open(&path).unwrap();
    let memory = Memory::new(store.clone());
    let mut rng = Lcg(0x5eed);
    let vocab = Vocab::new(8_000, &mut rng);
    let items = memories(n_memories, &vocab, &mut rng);
    let started = Instant::now();
    memory.store_many(&items).unwrap();
    println!("stored {} memories in {:.2?} (one transaction)", memory.count().unwrap(), started.elapsed());
    let queries = queries(n_queries, &vocab, &mut rng);

    // Warm the page cache and statement cache, then time every query.
    for q in queries.iter().take(50) {
        black_box(memory.recall(q, 10).unwrap());
    }
    for (label, category) in [("recall", None), ("recall_in(daily)", Some(DAILY))] {
        let mut times = Vec::with_capacity(queries.len());
        let mut hits = 0;
        for q in &queries {
            let t = Instant::now();
            let found = memory.recall_in(q, category, 10).unwrap();
            times.push(t.elapsed());
            hits += found.len();
        }
        times.sort_unstable();
        println!(
            "{label}: {} queries over {n_memories} memories, {hits} hits: \
             p50 {:.3?}  p90 {:.3?}  p99 {:.3?}  max {:.3?}",
            times.len(),
            percentile(&times, 0.50),
            percentile(&times, 0.90),
            percentile(&times, 0.99),
            percentile(&times, 1.0),
        );
    }

    // Where the time goes: choosing words (probes) vs ranking.
    let (mut plans, mut runs) = (Vec::new(), Vec::new());
    let mut kinds = [0usize; 4];
    for q in &queries {
        let words = query::tokens(q);
        if words.is_empty() {
            continue;
        }
        let (p, e) = store
            .with_conn(|c| {
                let t = Instant::now();
                let plan = query::plan(c, &words, query::BUDGET)?;
                let p = t.elapsed();
                kinds[match plan {
                    query::Plan::Empty => 0,
                    query::Plan::Ranked { floor: None, .. } => 1,
                    query::Plan::Ranked { .. } => 2,
                    query::Plan::Newest { .. } => 3,
                }] += 1;
                let t = Instant::now();
                black_box(query::execute(c, &plan, None, 10, query::BUDGET)?);
                Ok((p, t.elapsed()))
            })
            .unwrap();
        plans.push(p);
        runs.push(e);
    }
    plans.sort_unstable();
    runs.sort_unstable();
    println!(
        "  plan (probes): p50 {:.3?} p99 {:.3?}; execute: p50 {:.3?} p99 {:.3?}; \
         plans empty/ranked/ranked-newest-window/newest-only: {kinds:?}",
        percentile(&plans, 0.5),
        percentile(&plans, 0.99),
        percentile(&runs, 0.5),
        percentile(&runs, 0.99),
    );

    let mut c = Criterion::default()
        .sample_size(50)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();
    let mut i = 0;
    c.bench_function("recall/varied_queries", |b| {
        b.iter(|| {
            i = (i + 1) % queries.len();
            black_box(memory.recall(&queries[i], 10).unwrap())
        })
    });
    c.bench_function("recall/rare_word", |b| {
        let rare = vocab.words.last().cloned().unwrap_or_default();
        b.iter(|| black_box(memory.recall(&rare, 10).unwrap()))
    });
    c.bench_function("recall/common_words", |b| {
        let common = format!("{} {} {}", vocab.words[0], vocab.words[1], vocab.words[2]);
        b.iter(|| black_box(memory.recall(&common, 10).unwrap()))
    });
    c.final_summary();
}
