//! Benchmarks of the game core against its targets (BENCHMARKS.md): one block
//! shuffled in ≤ 20 ms, ≥ 1,000,000 scenarios per second on one core, and a
//! whole block dealt, staged and evaluated in ≤ 1 s; with the raw ChaCha20
//! stream and a plain SHA-256 as yardsticks of this machine.

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use sha2::{Digest, Sha256};
use std::hint::black_box;
use tresor_game::{
    BlockSecret, Level, ScenarioSeeder, Stake, UNITS_PER_BLOCK, block_outcomes, evaluate,
    generate_scenario,
};

fn secret() -> BlockSecret {
    BlockSecret::from_bytes(*b"benchmark secret: 32 bytes long!")
}

fn baselines(c: &mut Criterion) {
    let mut group = c.benchmark_group("baseline");
    group.throughput(Throughput::Bytes(4 * 450_000));
    group.bench_function("chacha20 stream, 450,000 u32 words", |b| {
        let mut rng = ChaCha20Rng::from_seed([7; 32]);
        b.iter(|| {
            let mut acc = 0u32;
            for _ in 0..450_000 {
                acc ^= rng.next_u32();
            }
            black_box(acc)
        });
    });
    group.throughput(Throughput::Elements(1));
    group.bench_function("sha256 of 32 bytes", |b| {
        b.iter(|| Sha256::digest(black_box([7u8; 32])));
    });
    group.finish();
}

fn block(c: &mut Criterion) {
    let secret = secret();
    let mut group = c.benchmark_group("block");
    group.throughput(Throughput::Elements(u64::from(UNITS_PER_BLOCK)));
    group.bench_function("shuffle one 450,000-unit block", |b| {
        b.iter(|| block_outcomes(black_box(&secret)));
    });
    group.finish();
}

fn scenario(c: &mut Criterion) {
    let seeder = ScenarioSeeder::new(&secret());
    let stake = Stake::try_from(100).unwrap();
    let levels: Vec<Level> = Level::all().collect();
    let mut group = c.benchmark_group("scenario");
    group.throughput(Throughput::Elements(1));
    let mut index = 0u32;
    group.bench_function("seed and stage one unit", |b| {
        b.iter(|| {
            index = index.wrapping_add(1);
            let level = levels[index as usize % levels.len()];
            generate_scenario(stake, level, &seeder.seed(black_box(index)))
        });
    });
    group.bench_function("stage one unit (seed given)", |b| {
        b.iter(|| {
            index = index.wrapping_add(1);
            let mut seed = [0u8; 32];
            seed[..4].copy_from_slice(&index.to_le_bytes());
            let level = levels[index as usize % levels.len()];
            generate_scenario(stake, level, black_box(&seed))
        });
    });
    group.finish();
}

fn whole_block(c: &mut Criterion) {
    let secret = secret();
    let stake = Stake::try_from(50).unwrap();
    let mut group = c.benchmark_group("whole block");
    group.sample_size(10);
    group.throughput(Throughput::Elements(u64::from(UNITS_PER_BLOCK)));
    group.bench_function("deal, stage and evaluate 450,000 units on one core", |b| {
        b.iter_batched(
            || (),
            |()| {
                let outcomes = block_outcomes(&secret);
                let seeder = ScenarioSeeder::new(&secret);
                let mut revealed = Vec::with_capacity(8);
                for (index, &level) in outcomes.iter().enumerate() {
                    let scenario = generate_scenario(stake, level, &seeder.seed(index as u32));
                    revealed.clear();
                    revealed.extend(scenario.opened().filter_map(|(_, o)| o.content.symbol()));
                    assert_eq!(evaluate(&revealed), Ok(level));
                }
                black_box(revealed.len())
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

criterion_group!(benches, baselines, block, scenario, whole_block);
criterion_main!(benches);
