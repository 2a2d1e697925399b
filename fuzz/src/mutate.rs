//! A small mutator for the stable-Rust runs: it derives inputs from seeds by byte flips,
//! insertions of grammar tokens, deletions, duplications and splices with other seeds, the
//! mutations libFuzzer applies first. Deterministic for a given generator.

use rand::Rng;
use rand::rngs::StdRng;

/// The longest input produced: long enough for deep nesting, short enough to run thousands.
pub const MAX_LEN: usize = 16 * 1024;

/// Bytes that end tokens or open structure in the grammars fuzzed here.
const SPECIAL: &[u8] = b"{}[](),:;=!<>\"'\\/.-_ \t\r\n\0#&?%*|$@~0123456789aZ";

/// One input derived from `seeds` (at least one) and `dictionary`.
pub fn mutate(rng: &mut StdRng, seeds: &[Vec<u8>], dictionary: &[&str]) -> Vec<u8> {
    let mut data = seeds[rng.random_range(0..seeds.len())].clone();
    let rounds = 1 + rng.random_range(0..8);
    for _ in 0..rounds {
        mutate_once(rng, &mut data, seeds, dictionary);
        data.truncate(MAX_LEN);
    }
    data
}

fn mutate_once(rng: &mut StdRng, data: &mut Vec<u8>, seeds: &[Vec<u8>], dictionary: &[&str]) {
    let at = |rng: &mut StdRng, len: usize| rng.random_range(0..=len);
    match rng.random_range(0..10) {
        // Flip a bit.
        0 if !data.is_empty() => {
            let i = rng.random_range(0..data.len());
            data[i] ^= 1 << rng.random_range(0..8);
        }
        // Replace a byte by a special one.
        1 if !data.is_empty() => {
            let i = rng.random_range(0..data.len());
            data[i] = SPECIAL[rng.random_range(0..SPECIAL.len())];
        }
        // Insert a grammar token.
        2 | 3 if !dictionary.is_empty() => {
            let token = dictionary[rng.random_range(0..dictionary.len())].as_bytes();
            let i = at(rng, data.len());
            data.splice(i..i, token.iter().copied());
        }
        // Delete a range.
        4 if !data.is_empty() => {
            let i = rng.random_range(0..data.len());
            let n = rng.random_range(1..=(data.len() - i).min(16));
            data.drain(i..i + n);
        }
        // Duplicate a range, many times: nesting and repetition.
        5 if !data.is_empty() => {
            let i = rng.random_range(0..data.len());
            let n = rng.random_range(1..=(data.len() - i).min(32));
            let piece: Vec<u8> = data[i..i + n].to_vec();
            let times = if rng.random_bool(0.2) {
                rng.random_range(2..300)
            } else {
                rng.random_range(1..4)
            };
            for _ in 0..times {
                data.splice(i..i, piece.iter().copied());
            }
        }
        // Splice in part of another seed.
        6 => {
            let other = &seeds[rng.random_range(0..seeds.len())];
            if !other.is_empty() {
                let i = rng.random_range(0..other.len());
                let n = rng.random_range(1..=(other.len() - i));
                let j = at(rng, data.len());
                data.splice(j..j, other[i..i + n].iter().copied());
            }
        }
        // Random bytes.
        7 => {
            let n = rng.random_range(1..8);
            let i = at(rng, data.len());
            let bytes: Vec<u8> = (0..n).map(|_| rng.random()).collect();
            data.splice(i..i, bytes);
        }
        // Truncate.
        8 if !data.is_empty() => {
            let n = rng.random_range(0..data.len());
            data.truncate(n);
        }
        // Swap two bytes.
        _ if data.len() > 1 => {
            let i = rng.random_range(0..data.len());
            let j = rng.random_range(0..data.len());
            data.swap(i, j);
        }
        _ => data.push(SPECIAL[rng.random_range(0..SPECIAL.len())]),
    }
}
