//! Serial references, computed directly from every rank's input, and test data.

use bytemuck::{Pod, Zeroable};
use hypercomm::collective::Collective;

/// A 2×2 matrix of integers mod 2^32, row major: multiplication is associative and not
/// commutative, so a wrong combine order shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
#[repr(C)]
pub struct Mat2(pub [u32; 4]);

impl Mat2 {
    pub fn mul(&self, o: &Mat2) -> Mat2 {
        let (a, b) = (self.0, o.0);
        let dot = |i: usize, j: usize| {
            a[2 * i]
                .wrapping_mul(b[j])
                .wrapping_add(a[2 * i + 1].wrapping_mul(b[2 + j]))
        };
        Mat2([dot(0, 0), dot(0, 1), dot(1, 0), dot(1, 1)])
    }
}

/// splitmix64: deterministic data without a dependency.
pub struct Rng(pub u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Test data of one element type.
pub trait Data: Pod + PartialEq + std::fmt::Debug + Send + Sync {
    fn random(rng: &mut Rng) -> Self;
}

impl Data for u32 {
    fn random(rng: &mut Rng) -> Self {
        rng.next() as u32
    }
}

impl Data for Mat2 {
    fn random(rng: &mut Rng) -> Self {
        Mat2([0; 4].map(|_| rng.next() as u32))
    }
}

/// `n` random elements for `seed`.
pub fn random<T: Data>(seed: u64, n: usize) -> Vec<T> {
    let mut rng = Rng::new(seed);
    (0..n).map(|_| T::random(&mut rng)).collect()
}

/// in_lo ⊕ … ⊕ in_{hi−1}, element-wise, in rank order, over `range` of each input.
fn fold<T: Copy>(
    inputs: &[Vec<T>],
    ranks: std::ops::Range<usize>,
    range: std::ops::Range<usize>,
    op: &dyn Fn(&T, &T) -> T,
) -> Vec<T> {
    let mut acc = inputs[ranks.start][range.clone()].to_vec();
    for input in &inputs[ranks.start + 1..ranks.end] {
        for (a, x) in acc.iter_mut().zip(&input[range.clone()]) {
            *a = op(a, x);
        }
    }
    acc
}

/// What rank r's output must be (`None`: unspecified), for every rank.
pub fn expected<T: Copy>(
    c: Collective,
    m: usize,
    inputs: &[Vec<T>],
    op: &dyn Fn(&T, &T) -> T,
) -> Vec<Option<Vec<T>>> {
    let k = inputs.len();
    let block = |r: usize| r * m..(r + 1) * m;
    let concat = |f: &dyn Fn(usize) -> Vec<T>| (0..k).flat_map(f).collect::<Vec<T>>();
    (0..k)
        .map(|r| {
            // A variable-count collective here has every count m: its fixed form.
            Some(match c.fixed() {
                Collective::P2p { src, dst } if r == dst as usize => inputs[src as usize].clone(),
                Collective::Broadcast { root } => inputs[root as usize].clone(),
                Collective::Scatter { root } => inputs[root as usize][block(r)].to_vec(),
                Collective::Gather { root } if r == root as usize => concat(&|i| inputs[i].clone()),
                Collective::Allgather => concat(&|i| inputs[i].clone()),
                Collective::Alltoall => concat(&|i| inputs[i][block(r)].to_vec()),
                Collective::Reduce { root } if r == root as usize => fold(inputs, 0..k, 0..m, op),
                Collective::Allreduce => fold(inputs, 0..k, 0..m, op),
                Collective::Scan => fold(inputs, 0..r + 1, 0..m, op),
                Collective::ExclusiveScan if r == 0 => return None,
                Collective::ExclusiveScan => fold(inputs, 0..r, 0..m, op),
                Collective::ReduceScatter => fold(inputs, 0..k, block(r), op),
                _ => Vec::new(),
            })
        })
        .collect()
}
