//! The kernels of the application examples, generic over the transport so that every
//! backend runs the same code: the threads backend here (each `examples/<name>.rs` does
//! `mod apps;`), the MPI backend by including this file
//! (`#[path = "…/hypercomm-rt/examples/apps/mod.rs"] mod apps;`).
//!
//! Each kernel runs on every rank of a communicator, computes its result distributed,
//! then recomputes it serially on every rank and compares: it returns a [`Summary`] of
//! what ran and what was checked, or an error message saying what did not match. The
//! programs are the motivating applications of the seeds:
//!
//! | kernel | collective(s) | seed |
//! |---|---|---|
//! | [`power_iteration`] | all-gather of v, all-reduce of ‖Av‖² | 004, Saad & Schultz §1 |
//! | [`conjugate_gradient`] | all-gather of p, all-reduce of inner products | 004, §1 |
//! | [`gaussian_elimination`] | broadcast of the pivot row, all-reduce (max-loc) | 004, §1 |
//! | [`nbody`] | all-gather of positions and masses | 004, §1 |
//! | [`transpose`] | all-to-all of b×b blocks | 004, §1 |
//! | [`prefix_sums`] | inclusive and exclusive scan | 001 |
//! | [`bucket_sort`] | all-to-all of the bucket counts, alltoallv of the keys | MPI-3.1 §5.8 |
//!
//! Seed 004 is Y. Saad and M. H. Schultz, *Data Communication in Parallel
//! Architectures* (1989), whose §1 lists these computations as the users of the
//! collectives; seed 001 is the prefix-sum (scan) seed.
//!
//! The `algo` argument of a kernel chooses the algorithm of its main collective (the
//! first one listed above: the all-gathers of power iteration, CG and N-body, the
//! broadcasts of Gaussian elimination, the all-to-all of the transpose, both scans of the
//! prefix sums); its other collectives run with `Algo::Auto`.
//!
//! Data are deterministic: entry `i` of a data set with seed `s` is [`unit`]`(s, i)`, a
//! SplitMix64 hash, so a rank generates only its own rows and the serial check generates
//! the same numbers whatever the rank count.

#![allow(dead_code)]

use std::fmt;
use std::ops::Range;

use hypercomm::collective::OpKind;
use hypercomm_rt::threads::{self, Threads};
use hypercomm_rt::{Algo, Comm, Op, Ran, Transport};

/// `f64`'s unit round-off (half the machine epsilon).
pub const U: f64 = f64::EPSILON / 2.0;

// ---------------------------------------------------------------------------------
// Shared pieces: data, distribution, summary.

/// The `i`-th output of SplitMix64 seeded with `seed`: a hash of `(seed, i)`.
pub fn mix(seed: u64, i: u64) -> u64 {
    let mut z = seed.wrapping_add((i.wrapping_add(1)).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A number in [0, 1) determined by `(seed, i)` (53 random bits).
pub fn unit(seed: u64, i: u64) -> f64 {
    (mix(seed, i) >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// A number in [-1, 1) determined by `(seed, i)`.
pub fn signed(seed: u64, i: u64) -> f64 {
    2.0 * unit(seed, i) - 1.0
}

/// `n` items in `k` blocks of `b = ⌈n/k⌉` (the last blocks may be short or empty), so
/// that every rank's block has the same padded length `b`, as all-gather and all-to-all
/// need.
#[derive(Clone, Copy, Debug)]
pub struct Blocks {
    /// Items.
    pub n: usize,
    /// Blocks (ranks).
    pub k: usize,
    /// Padded block length.
    pub b: usize,
}

impl Blocks {
    /// `n` items over `k` ranks.
    pub fn new(n: usize, k: u32) -> Self {
        let k = k as usize;
        Blocks {
            n,
            k,
            b: n.div_ceil(k),
        }
    }
    /// Padded total, `k · b`.
    pub fn padded(&self) -> usize {
        self.k * self.b
    }
    /// The real items of block `r`.
    pub fn range(&self, r: u32) -> Range<usize> {
        let lo = (r as usize * self.b).min(self.n);
        lo..(lo + self.b).min(self.n)
    }
}

/// What a kernel ran and checked.
#[derive(Clone, Debug)]
pub struct Summary {
    /// The kernel.
    pub kernel: &'static str,
    /// Ranks.
    pub ranks: u32,
    /// Problem size.
    pub n: usize,
    /// What the main collective ran (the one `algo` chose).
    pub main: Ran,
    /// Every distinct (collective, algorithm) the kernel ran, in first-call order.
    pub ran: Vec<Ran>,
    /// One line per check: the quantity, its value and its bound.
    pub checks: Vec<String>,
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{}: n = {}, {} ranks; main collective {} ran `{}`{}",
            self.kernel,
            self.n,
            self.ranks,
            self.main.op,
            self.main.algorithm,
            if self.main.auto { " (auto)" } else { "" }
        )?;
        for r in &self.ran {
            let auto = if r.auto { " (auto)" } else { "" };
            writeln!(
                f,
                "  {:<15} {:<20} {} steps{auto}",
                r.op.to_string(),
                r.algorithm,
                r.steps
            )?;
        }
        for c in &self.checks {
            writeln!(f, "  ok: {c}")?;
        }
        Ok(())
    }
}

/// Records what collectives ran; turns runtime errors into messages.
struct Log {
    kernel: &'static str,
    main: OpKind,
    first_main: Option<Ran>,
    ran: Vec<Ran>,
    checks: Vec<String>,
}

impl Log {
    fn new(kernel: &'static str, main: OpKind) -> Self {
        Log {
            kernel,
            main,
            first_main: None,
            ran: Vec::new(),
            checks: Vec::new(),
        }
    }

    /// Note a collective call's outcome.
    fn note(&mut self, what: &str, got: hypercomm_rt::Result<Ran>) -> Result<(), String> {
        let ran = got.map_err(|e| format!("{}: {what}: {e}", self.kernel))?;
        if ran.op == self.main && self.first_main.is_none() {
            self.first_main = Some(ran);
        }
        let seen = self
            .ran
            .iter()
            .any(|r| r.op == ran.op && r.algorithm == ran.algorithm);
        if !seen {
            self.ran.push(ran);
        }
        Ok(())
    }

    /// Check `err ≤ bound`, recording the line or failing with it.
    fn check(&mut self, rank: u32, what: &str, err: f64, bound: f64) -> Result<(), String> {
        let line = format!("{what} = {err:.3e} ≤ {bound:.3e}");
        if err.is_nan() || err > bound {
            return Err(format!(
                "{}: MISMATCH on rank {rank}: {what} = {err:.3e} exceeds its bound {bound:.3e}",
                self.kernel
            ));
        }
        self.checks.push(line);
        Ok(())
    }

    /// Check exact equality of two slices (bitwise for floats).
    fn check_exact<T: PartialEq + fmt::Debug>(
        &mut self,
        rank: u32,
        what: &str,
        got: &[T],
        want: &[T],
    ) -> Result<(), String> {
        if got.len() != want.len() {
            return Err(format!(
                "{}: MISMATCH on rank {rank}: {what}: {} elements, expected {}",
                self.kernel,
                got.len(),
                want.len()
            ));
        }
        if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
            return Err(format!(
                "{}: MISMATCH on rank {rank}: {what}: element {i} is {:?}, the serial result is {:?}",
                self.kernel, got[i], want[i]
            ));
        }
        self.checks.push(format!(
            "{what}: {} elements equal to the serial result",
            got.len()
        ));
        Ok(())
    }

    fn finish(self, ranks: u32, n: usize) -> Result<Summary, String> {
        let main = self
            .first_main
            .ok_or_else(|| format!("{}: the main collective never ran", self.kernel))?;
        Ok(Summary {
            kernel: self.kernel,
            ranks,
            n,
            main,
            ran: self.ran,
            checks: self.checks,
        })
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn norm_inf(a: &[f64]) -> f64 {
    a.iter().fold(0.0, |m, x| m.max(x.abs()))
}

fn sum_all<X: Transport>(
    comm: &mut Comm<X>,
    log: &mut Log,
    what: &str,
    local: f64,
) -> Result<f64, String> {
    let mut out = [0.0];
    let got = comm.all_reduce_into(&[local], &mut out, &Op::sum(), Algo::Auto);
    log.note(what, got)?;
    Ok(out[0])
}

// ---------------------------------------------------------------------------------
// Power iteration.

/// Iterations of the power method: enough for its error, (λ₂/λ₁)^t, to be far below
/// rounding for the matrices used here (λ₂/λ₁ ≤ 0.5 for n ≥ 4).
pub const POWER_ITERATIONS: usize = 100;

/// A of the power iteration: symmetric, entries in [0, 1) (positive, so its dominant
/// eigenvalue is simple and its eigenvector positive, by Perron–Frobenius).
fn power_entry(n: usize, i: usize, j: usize) -> f64 {
    let (lo, hi) = if i <= j { (i, j) } else { (j, i) };
    unit(0x5EED_0004, (lo * n + hi) as u64)
}

/// `v` and the Rayleigh quotient λ of the power method on the full matrix, serially.
fn power_serial(n: usize, iterations: usize) -> (Vec<f64>, f64) {
    let a: Vec<Vec<f64>> = (0..n)
        .map(|i| (0..n).map(|j| power_entry(n, i, j)).collect())
        .collect();
    let mut v = vec![1.0 / (n as f64).sqrt(); n];
    for _ in 0..iterations {
        let y: Vec<f64> = a.iter().map(|row| dot(row, &v)).collect();
        let norm = dot(&y, &y).sqrt();
        v = y.iter().map(|x| x / norm).collect();
    }
    let y: Vec<f64> = a.iter().map(|row| dot(row, &v)).collect();
    let lambda = dot(&v, &y);
    (v, lambda)
}

/// Power iteration `v ← Av / ‖Av‖` for the dominant eigenpair of a symmetric positive
/// n×n matrix whose rows are distributed in blocks: each iteration all-gathers v
/// (`algo`), multiplies by the local rows and all-reduces ‖Av‖². Checks the eigenvalue
/// and eigenvector against the serial power method, and the eigen-residual.
///
/// Seed 004 (Saad & Schultz, §1): the matrix–vector product with rows distributed needs
/// the whole vector on every processor, a multinode broadcast (all-gather) per step.
pub fn power_iteration<X: Transport>(
    comm: &mut Comm<X>,
    n: usize,
    algo: Algo,
) -> Result<Summary, String> {
    let (k, r) = (comm.size(), comm.rank());
    let blocks = Blocks::new(n, k);
    let mine = blocks.range(r);
    let mut log = Log::new("power_iteration", OpKind::Allgather);
    // Local rows (padded to b rows; padding rows are zero and give zero).
    let a: Vec<Vec<f64>> = mine
        .clone()
        .map(|i| (0..n).map(|j| power_entry(n, i, j)).collect())
        .collect();
    let mut v_local = vec![0.0; blocks.b];
    for x in &mut v_local[..mine.len()] {
        *x = 1.0 / (n as f64).sqrt();
    }
    let mut v = vec![0.0; blocks.padded()];
    let mut y = vec![0.0; blocks.b];
    for _ in 0..POWER_ITERATIONS {
        let got = comm.all_gather_into(&v_local, &mut v, algo);
        log.note("all-gather of v", got)?;
        for (yi, row) in y.iter_mut().zip(&a) {
            *yi = dot(row, &v[..n]);
        }
        let norm = sum_all(comm, &mut log, "all-reduce of ‖Av‖²", dot(&y, &y))?.sqrt();
        for (vi, yi) in v_local.iter_mut().zip(&y) {
            *vi = yi / norm;
        }
    }
    // The Rayleigh quotient λ = vᵀAv and the residual ‖Av − λv‖∞.
    let got = comm.all_gather_into(&v_local, &mut v, algo);
    log.note("all-gather of v", got)?;
    for (yi, row) in y.iter_mut().zip(&a) {
        *yi = dot(row, &v[..n]);
    }
    let lambda = sum_all(comm, &mut log, "all-reduce of vᵀAv", dot(&v_local, &y))?;
    let local_res = y
        .iter()
        .zip(&v_local)
        .fold(0.0f64, |m, (yi, vi)| m.max((yi - lambda * vi).abs()));
    let mut res = [0.0];
    let got = comm.all_reduce_into(&[local_res], &mut res, &Op::max(), Algo::Auto);
    log.note("all-reduce of the residual", got)?;

    // Serial check. The distributed run does the serial run's operations except the
    // order of the sums of n terms in ‖Av‖² and vᵀAv (all-reduce). Every term is
    // positive (A > 0, v > 0), so each sum is within (n−1)u relative of the exact one in
    // either order: the two runs' norms differ by ≤ 2(n−1)u relatively. A norm only
    // rescales v, and the next step's normalisation removes the scale, so differences
    // do not accumulate: the final v differs by ≤ 2nu (its last normalisation) and λ by
    // ≤ 2nu (its sum) + 4nu (vᵀAv is quadratic in v's scale): within 8nu.
    let (v_serial, lambda_serial) = power_serial(n, POWER_ITERATIONS);
    let bound = 8.0 * n as f64 * U;
    let dv = norm_inf(
        &v[..n]
            .iter()
            .zip(&v_serial)
            .map(|(a, b)| a - b)
            .collect::<Vec<_>>(),
    ) / norm_inf(&v_serial);
    log.check(r, "eigenvector ‖v − v_serial‖∞/‖v_serial‖∞", dv, bound)?;
    let dl = (lambda - lambda_serial).abs() / lambda_serial.abs();
    log.check(r, "eigenvalue |λ − λ_serial|/λ_serial", dl, bound)?;
    // The eigen-residual: after 100 iterations the power method's own error is below
    // 0.5^100; what is left is rounding in computing Av (n terms: ≤ nu‖A‖∞‖v‖∞) and
    // λv, with ‖A‖∞ ≈ λ for this positive matrix: bound 4nu·λ‖v‖∞.
    let rbound = 4.0 * n as f64 * U * lambda * norm_inf(&v[..n]);
    log.check(r, "eigen-residual ‖Av − λv‖∞", res[0], rbound)?;
    log.checks.push(format!("λ = {lambda:.12}"));
    log.finish(k, n)
}

// ---------------------------------------------------------------------------------
// Conjugate gradient.

/// Relative residual at which conjugate gradient stops.
pub const CG_RTOL: f64 = 1e-10;

/// `y = A x` for the 1-D Laplacian tridiag(−1, 2, −1), rows `rows` of it, `x` whole.
fn laplacian_rows(x: &[f64], rows: Range<usize>, y: &mut [f64]) {
    let n = x.len();
    for (yi, i) in y.iter_mut().zip(rows) {
        let left = if i > 0 { x[i - 1] } else { 0.0 };
        let right = if i + 1 < n { x[i + 1] } else { 0.0 };
        *yi = 2.0 * x[i] - left - right;
    }
}

/// The known solution x* of the CG system, from which b = A x*.
fn cg_solution(i: usize) -> f64 {
    signed(0x5EED_0C06, i as u64)
}

/// The right-hand side b = A x* for the CG system, entry `i`.
fn cg_rhs(n: usize, i: usize) -> f64 {
    let left = if i > 0 { cg_solution(i - 1) } else { 0.0 };
    let right = if i + 1 < n { cg_solution(i + 1) } else { 0.0 };
    2.0 * cg_solution(i) - left - right
}

/// The tridiagonal system solved directly (Thomas algorithm: LU without pivoting,
/// stable for this symmetric positive definite, weakly diagonally dominant matrix).
fn thomas(b: &[f64]) -> Vec<f64> {
    let n = b.len();
    let (mut c, mut d) = (vec![0.0; n], vec![0.0; n]);
    let mut prev_c = 0.0;
    let mut prev_d = 0.0;
    for i in 0..n {
        let m = 2.0 + prev_c; // 2 − (−1)·c'ᵢ₋₁
        c[i] = -1.0 / m;
        d[i] = (b[i] + prev_d) / m;
        prev_c = c[i];
        prev_d = d[i];
    }
    let mut x = vec![0.0; n];
    for i in (0..n).rev() {
        x[i] = d[i] - c[i] * if i + 1 < n { x[i + 1] } else { 0.0 };
    }
    x
}

/// `(‖b − Ax‖₂/‖b‖₂, δ)` for the Laplacian, where δ bounds the rounding error of the
/// computed relative residual: each entry of b − Ax is 4 operations on |b| + |A||x|,
/// so it is off by ≤ 5u(|bᵢ| + 4‖x‖∞), relative to ‖b‖₂ at most 5u(‖b‖₂ + 4√n‖x‖∞)/‖b‖₂.
fn laplacian_residual(x: &[f64], b: &[f64]) -> (f64, f64) {
    let n = x.len();
    let mut ax = vec![0.0; n];
    laplacian_rows(x, 0..n, &mut ax);
    let r: Vec<f64> = b.iter().zip(&ax).map(|(bi, ai)| bi - ai).collect();
    let nb = dot(b, b).sqrt();
    let delta = 5.0 * U * (nb + 4.0 * (n as f64).sqrt() * norm_inf(x)) / nb;
    (dot(&r, &r).sqrt() / nb, delta)
}

/// Conjugate gradient on the n×n 1-D Laplacian tridiag(−1, 2, −1) (symmetric positive
/// definite) with rows distributed in blocks: each iteration all-gathers the direction p
/// (`algo`) for the product Ap and all-reduces the inner products pᵀAp and rᵀr. Stops at
/// ‖r‖ ≤ 10⁻¹⁰‖b‖, then checks x against the serial direct (tridiagonal) solution with
/// the bound the condition number gives.
///
/// Seed 004 (Saad & Schultz, §1): iterative solvers alternate a distributed
/// matrix–vector product (all-gather) with inner products (all-reduce). For this
/// tridiagonal matrix a neighbour exchange would do; the all-gather is the general
/// pattern for a row-distributed matrix.
pub fn conjugate_gradient<X: Transport>(
    comm: &mut Comm<X>,
    n: usize,
    algo: Algo,
) -> Result<Summary, String> {
    let (k, r) = (comm.size(), comm.rank());
    let blocks = Blocks::new(n, k);
    let mine = blocks.range(r);
    let mut log = Log::new("conjugate_gradient", OpKind::Allgather);
    let b_local: Vec<f64> = mine.clone().map(|i| cg_rhs(n, i)).collect();
    let m = mine.len();
    // x₀ = 0, r₀ = b, p₀ = r₀; vectors padded to b entries (padding stays 0).
    let mut x = vec![0.0; blocks.b];
    let mut res = vec![0.0; blocks.b];
    res[..m].copy_from_slice(&b_local);
    let mut p = res.clone();
    let mut p_all = vec![0.0; blocks.padded()];
    let mut q = vec![0.0; blocks.b];
    let bb = sum_all(comm, &mut log, "all-reduce of bᵀb", dot(&b_local, &b_local))?;
    let mut rr = bb;
    let max_iterations = 4 * n + 10;
    let mut iterations = 0;
    loop {
        // Every rank must take the same branch. The all-reduce's sum could in principle
        // differ in its last bits between ranks (MPI does not promise otherwise), so the
        // decision is itself all-reduced, on integers, which are exact.
        let done_here = u32::from(rr <= CG_RTOL * CG_RTOL * bb);
        let mut done = [0u32];
        let got = comm.all_reduce_into(&[done_here], &mut done, &Op::max(), Algo::Auto);
        log.note("all-reduce of the stopping test", got)?;
        if done[0] == 1 {
            break;
        }
        if iterations == max_iterations {
            return Err(format!(
                "conjugate_gradient: no convergence in {max_iterations} iterations \
                 (‖r‖/‖b‖ = {:.3e})",
                (rr / bb).sqrt()
            ));
        }
        iterations += 1;
        let got = comm.all_gather_into(&p, &mut p_all, algo);
        log.note("all-gather of p", got)?;
        laplacian_rows(&p_all[..n], mine.clone(), &mut q[..m]);
        let pq = sum_all(comm, &mut log, "all-reduce of pᵀAp", dot(&p[..m], &q[..m]))?;
        let alpha = rr / pq;
        for i in 0..m {
            x[i] += alpha * p[i];
            res[i] -= alpha * q[i];
        }
        let rr_new = sum_all(
            comm,
            &mut log,
            "all-reduce of rᵀr",
            dot(&res[..m], &res[..m]),
        )?;
        let beta = rr_new / rr;
        rr = rr_new;
        for i in 0..m {
            p[i] = res[i] + beta * p[i];
        }
    }
    let mut x_all = vec![0.0; blocks.padded()];
    let got = comm.all_gather_into(&x, &mut x_all, algo);
    log.note("all-gather of x", got)?;
    let x_all = &x_all[..n];

    // Serial check, on every rank. For any x̂, ‖x̂ − x‖/‖x‖ ≤ κ‖b − Ax̂‖/‖b‖ with x the
    // exact solution and κ = λmax/λmin the condition number; the Laplacian's eigenvalues
    // are 2 − 2cos(jπ/(n+1)), j = 1..n. Applied to the CG solution and the direct one:
    // ‖x_cg − x_direct‖ ≤ κ(ρ_cg + ρ_direct)‖x‖, where each ρ is the computed relative
    // residual plus its rounding error δ, and ‖x‖ ≥ ‖x_direct‖/(1 + κρ_direct).
    let b: Vec<f64> = (0..n).map(|i| cg_rhs(n, i)).collect();
    let x_direct = thomas(&b);
    let theta = std::f64::consts::PI / (n as f64 + 1.0);
    let kappa = (2.0 - 2.0 * (n as f64 * theta).cos()) / (2.0 - 2.0 * theta.cos());
    let (res_cg, delta_cg) = laplacian_residual(x_all, &b);
    let (res_direct, delta_direct) = laplacian_residual(&x_direct, &b);
    // The recurrence's residual and the true one drift apart by rounding:
    // ‖(b − Ax_j) − r_j‖ ≤ c·u·j·‖A‖·max‖x_i‖ with a modest c (Greenbaum, SIMAX 18(3),
    // 1997), and ‖A‖‖x‖/‖b‖ ≤ κ: allow the true residual 10·u·κ·j above the tolerance.
    let drift = 10.0 * U * kappa * iterations.max(1) as f64;
    log.check(r, "true residual ‖b − Ax‖/‖b‖", res_cg, CG_RTOL + drift)?;
    let (rho_cg, rho_direct) = (res_cg + delta_cg, res_direct + delta_direct);
    let bound = kappa * (rho_cg + rho_direct) * (1.0 + kappa * rho_direct);
    let diff: Vec<f64> = x_all.iter().zip(&x_direct).map(|(a, b)| a - b).collect();
    let err = (dot(&diff, &diff) / dot(&x_direct, &x_direct)).sqrt();
    log.check(
        r,
        "‖x − x_direct‖₂/‖x_direct‖₂ (bound κ(ρ+ρ_d)(1+κρ_d))",
        err,
        bound,
    )?;
    log.checks
        .push(format!("{iterations} iterations, κ = {kappa:.1}"));
    log.finish(k, n)
}

// ---------------------------------------------------------------------------------
// Gaussian elimination.

/// Entry (i, j) of the Gaussian elimination system [A | b], j = n is b: uniform in
/// [−1, 1), a matrix that needs pivoting.
fn ge_entry(n: usize, i: usize, j: usize) -> f64 {
    signed(0x5EED_06E0, (i * (n + 1) + j) as u64)
}

/// The pivot candidate `[|a|, row]`: the larger |a| wins, the lower row on a tie (an
/// exact, associative and commutative choice: every rank gets the same pivot).
fn maxloc(a: &[f64; 2], b: &[f64; 2]) -> [f64; 2] {
    if a[0] > b[0] || (a[0] == b[0] && a[1] <= b[1]) {
        *a
    } else {
        *b
    }
}

/// Serial Gaussian elimination with partial pivoting by the same rule (largest |a|,
/// lowest row on a tie), without moving rows, and column-oriented back substitution:
/// the same operations in the same order as the distributed version. Returns x and the
/// growth factor max|u|/max|a|.
fn ge_serial(n: usize) -> Result<(Vec<f64>, f64), String> {
    let mut a: Vec<Vec<f64>> = (0..n)
        .map(|i| (0..=n).map(|j| ge_entry(n, i, j)).collect())
        .collect();
    let max_a = a.iter().map(|row| norm_inf(&row[..n])).fold(0.0, f64::max);
    let mut max_u = max_a;
    let mut used = vec![false; n];
    let mut order = Vec::with_capacity(n);
    for s in 0..n {
        let p = (0..n)
            .filter(|&i| !used[i])
            .map(|i| [a[i][s].abs(), i as f64])
            .reduce(|x, y| maxloc(&x, &y))
            .map(|c| c[1] as usize)
            .ok_or("no rows left")?;
        if a[p][s] == 0.0 {
            return Err(format!("gaussian_elimination: singular at column {s}"));
        }
        used[p] = true;
        order.push(p);
        let pivot = a[p].clone();
        for i in (0..n).filter(|&i| !used[i]) {
            let f = a[i][s] / pivot[s];
            a[i][s] = 0.0;
            for j in s + 1..=n {
                a[i][j] -= f * pivot[j];
            }
            max_u = max_u.max(norm_inf(&a[i][s + 1..n]));
        }
    }
    let mut x = vec![0.0; n];
    for s in (0..n).rev() {
        let p = order[s];
        x[s] = a[p][n] / a[p][s];
        for &q in &order[..s] {
            a[q][n] -= a[q][s] * x[s];
        }
    }
    Ok((x, max_u / max_a))
}

/// Gaussian elimination with partial pivoting on a dense random n×n system Ax = b, rows
/// distributed cyclically (row i on rank i mod k). Step s: an all-reduce with a max-loc
/// operator finds the pivot row (largest |a_is| among the rows not yet used), its owner
/// broadcasts it (`algo`), every rank eliminates column s from its unused rows. Rows are
/// not moved: the pivot order is remembered. Back substitution: the owner of step s's
/// pivot row computes x_s and broadcasts it, every rank updates its right-hand sides.
/// Checks x against the serial elimination (bitwise) and the backward error.
///
/// Seed 004 (Saad & Schultz, §1): in Gaussian elimination with rows distributed, the
/// pivot row is broadcast from the processor that holds it at every step.
pub fn gaussian_elimination<X: Transport>(
    comm: &mut Comm<X>,
    n: usize,
    algo: Algo,
) -> Result<Summary, String> {
    let (k, r) = (comm.size(), comm.rank());
    let mut log = Log::new("gaussian_elimination", OpKind::Broadcast);
    let owner = |i: usize| (i % k as usize) as u32;
    // My rows of [A | b], with their global indices.
    let rows: Vec<usize> = (r as usize..n).step_by(k as usize).collect();
    let mut a: Vec<Vec<f64>> = rows
        .iter()
        .map(|&i| (0..=n).map(|j| ge_entry(n, i, j)).collect())
        .collect();
    let mut used = vec![false; rows.len()];
    let mut order = Vec::with_capacity(n);
    let maxloc_op = Op::commutative(maxloc);
    let mut pivot = vec![0.0; n + 1];
    for s in 0..n {
        let mine = (0..rows.len())
            .filter(|&l| !used[l])
            .map(|l| [a[l][s].abs(), rows[l] as f64])
            .reduce(|x, y| maxloc(&x, &y))
            .unwrap_or([-1.0, f64::MAX]);
        let mut best = [[0.0; 2]];
        let got = comm.all_reduce_into(&[mine], &mut best, &maxloc_op, Algo::Auto);
        log.note("all-reduce (max-loc) of the pivot", got)?;
        let [value, row] = best[0];
        if value <= 0.0 {
            return Err(format!("gaussian_elimination: singular at column {s}"));
        }
        let p = row as usize;
        order.push(p);
        let piv = &mut pivot[s..];
        if owner(p) == r {
            let l = rows
                .iter()
                .position(|&i| i == p)
                .ok_or("pivot row not mine")?;
            used[l] = true;
            piv.copy_from_slice(&a[l][s..]);
        }
        let got = comm.broadcast_into(owner(p), piv, algo);
        log.note("broadcast of the pivot row", got)?;
        for l in (0..rows.len()).filter(|&l| !used[l]) {
            let f = a[l][s] / pivot[s];
            a[l][s] = 0.0;
            for j in s + 1..=n {
                a[l][j] -= f * pivot[j];
            }
        }
    }
    // Back substitution, column-oriented: x_s from its pivot row's owner, then every
    // rank removes column s from the right-hand sides of the earlier pivot rows it holds.
    let step_of: Vec<usize> = {
        let mut step = vec![0; n];
        for (s, &p) in order.iter().enumerate() {
            step[p] = s;
        }
        step
    };
    let mut x = vec![0.0; n];
    for s in (0..n).rev() {
        let p = order[s];
        let mut xs = [0.0];
        if owner(p) == r {
            let l = rows
                .iter()
                .position(|&i| i == p)
                .ok_or("pivot row not mine")?;
            xs[0] = a[l][n] / a[l][s];
        }
        let got = comm.broadcast_into(owner(p), &mut xs, algo);
        log.note("broadcast of x_s", got)?;
        x[s] = xs[0];
        for (l, &i) in rows.iter().enumerate() {
            if step_of[i] < s {
                a[l][n] -= a[l][s] * x[s];
            }
        }
    }

    // Serial check on every rank. The distributed code performs exactly the serial
    // code's floating-point operations, in the same order, on the same operands (the
    // broadcasts copy bits, the max-loc is exact), so x must agree bitwise.
    let (x_serial, growth) = ge_serial(n)?;
    log.check_exact(r, "x vs serial elimination", &x, &x_serial)?;
    // Backward error η = ‖b − Ax‖∞/(‖A‖∞‖x‖∞ + ‖b‖∞). Partial pivoting is backward stable:
    // the computed x solves (A + ΔA)x = b with |ΔA| ≤ γ₃ₙ|L||U| (Higham, *Accuracy and
    // Stability of Numerical Algorithms*, Thm 9.4); |l| ≤ 1 and |u| ≤ ρ·max|a| (ρ the
    // growth factor over every intermediate entry) give ‖|L||U|‖∞ ≤ n²ρ‖A‖∞, so
    // η ≤ γ₃ₙ·n²ρ; computing the residual adds at most γₙ₊₁.
    let full: Vec<Vec<f64>> = (0..n)
        .map(|i| (0..=n).map(|j| ge_entry(n, i, j)).collect())
        .collect();
    let resid: Vec<f64> = full.iter().map(|row| row[n] - dot(&row[..n], &x)).collect();
    let norm_a = full
        .iter()
        .map(|row| row[..n].iter().map(|v| v.abs()).sum::<f64>())
        .fold(0.0, f64::max);
    let norm_b = full.iter().fold(0.0f64, |m, row| m.max(row[n].abs()));
    let eta = norm_inf(&resid) / (norm_a * norm_inf(&x) + norm_b);
    let gamma = |m: f64| m * U / (1.0 - m * U);
    let nf = n as f64;
    let bound = gamma(3.0 * nf) * nf * nf * growth + gamma(nf + 1.0);
    log.check(r, "backward error ‖b − Ax‖∞/(‖A‖‖x‖ + ‖b‖)", eta, bound)?;
    log.checks.push(format!("growth factor ρ = {growth:.2}"));
    log.finish(k, n)
}

// ---------------------------------------------------------------------------------
// N-body.

/// Time steps of the N-body example.
pub const NBODY_STEPS: usize = 10;
const NBODY_DT: f64 = 1e-3;
/// Plummer softening², so close pairs give finite forces.
const NBODY_SOFT2: f64 = 1e-2;

/// Body `i` at the start: position in the unit cube, a small velocity, mass in [0.5, 1.5).
fn body(i: usize) -> ([f64; 4], [f64; 3]) {
    let s = 0x5EED_0B0D;
    let h = |c: u64| unit(s, 8 * i as u64 + c);
    let pos = [h(0), h(1), h(2), 0.5 + h(3)];
    let vel = [0.1 * (h(4) - 0.5), 0.1 * (h(5) - 0.5), 0.1 * (h(6) - 0.5)];
    (pos, vel)
}

/// Acceleration of a body at `x` from every body of `all` ([x, y, z, mass]; G = 1,
/// softened), summed in index order. A body's own term is zero (d = 0).
fn acceleration(x: &[f64; 4], all: &[[f64; 4]]) -> [f64; 3] {
    let mut acc = [0.0; 3];
    for other in all {
        let d = [other[0] - x[0], other[1] - x[1], other[2] - x[2]];
        let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + NBODY_SOFT2;
        let w = other[3] / (r2 * r2.sqrt());
        for c in 0..3 {
            acc[c] += w * d[c];
        }
    }
    acc
}

/// Half a kick of leapfrog (kick–drift–kick): `v += a·dt/2`.
fn leapfrog_half_kick(vs: &mut [[f64; 3]], acc: &[[f64; 3]]) {
    for (v, a) in vs.iter_mut().zip(acc) {
        for c in 0..3 {
            v[c] += 0.5 * NBODY_DT * a[c];
        }
    }
}

/// The drift of leapfrog: `x += v·dt`.
fn drift(xs: &mut [[f64; 4]], vs: &[[f64; 3]]) {
    for (x, v) in xs.iter_mut().zip(vs) {
        for c in 0..3 {
            x[c] += NBODY_DT * v[c];
        }
    }
}

/// Serial N-body: positions and velocities after `steps` steps.
fn nbody_serial(n: usize, steps: usize) -> (Vec<[f64; 4]>, Vec<[f64; 3]>) {
    let (mut xs, mut vs): (Vec<_>, Vec<_>) = (0..n).map(body).unzip();
    let mut acc: Vec<[f64; 3]> = xs.iter().map(|x| acceleration(x, &xs)).collect();
    for _ in 0..steps {
        leapfrog_half_kick(&mut vs, &acc);
        drift(&mut xs, &vs);
        acc = xs.iter().map(|x| acceleration(x, &xs)).collect();
        leapfrog_half_kick(&mut vs, &acc);
    }
    (xs, vs)
}

/// `steps` leapfrog steps of n gravitating bodies distributed in blocks: each step
/// all-gathers every body's position and mass (`algo`), then each rank computes the
/// forces on its own bodies from all n. Checks positions and velocities against the
/// serial simulation (bitwise).
///
/// Seed 004 (Saad & Schultz, §1): in N-body simulations every processor needs every
/// body's position at every step, a multinode broadcast (all-gather).
pub fn nbody<X: Transport>(comm: &mut Comm<X>, n: usize, algo: Algo) -> Result<Summary, String> {
    let (k, r) = (comm.size(), comm.rank());
    let blocks = Blocks::new(n, k);
    let mine = blocks.range(r);
    let m = mine.len();
    let mut log = Log::new("nbody", OpKind::Allgather);
    // Padding bodies have mass 0 (they pull nothing) and are never moved.
    let mut xs = vec![[0.0; 4]; blocks.b];
    let mut vs = vec![[0.0; 3]; m];
    for (l, i) in mine.clone().enumerate() {
        (xs[l], vs[l]) = body(i);
    }
    let mut all = vec![[0.0f64; 4]; blocks.padded()];
    let mut gather = |comm: &mut Comm<X>, xs: &[[f64; 4]], all: &mut [[f64; 4]]| {
        let got = comm.all_gather_into(xs, all, algo);
        log.note("all-gather of positions", got)
    };
    // The real bodies of `all`, in index order (the blocks' padding removed).
    let real = |all: &[[f64; 4]]| -> Vec<[f64; 4]> {
        (0..k)
            .flat_map(|q| {
                let range = blocks.range(q);
                let start = q as usize * blocks.b;
                all[start..start + range.len()].to_vec()
            })
            .collect()
    };
    gather(comm, &xs, &mut all)?;
    let bodies = real(&all);
    let mut acc: Vec<[f64; 3]> = xs[..m].iter().map(|x| acceleration(x, &bodies)).collect();
    for _ in 0..NBODY_STEPS {
        leapfrog_half_kick(&mut vs, &acc);
        drift(&mut xs[..m], &vs);
        gather(comm, &xs, &mut all)?;
        let bodies = real(&all);
        acc = xs[..m].iter().map(|x| acceleration(x, &bodies)).collect();
        leapfrog_half_kick(&mut vs, &acc);
    }
    // Serial check: each body's acceleration sums the same terms in the same order as
    // the serial code, from bit-identical positions (all-gather copies bits), so the
    // trajectories agree bitwise.
    let (xs_serial, vs_serial) = nbody_serial(n, NBODY_STEPS);
    let flat = |v: &[[f64; 4]]| v.iter().flat_map(|b| b[..3].to_vec()).collect::<Vec<_>>();
    let flat3 = |v: &[[f64; 3]]| v.iter().flatten().copied().collect::<Vec<_>>();
    log.check_exact(
        r,
        "my positions",
        &flat(&xs[..m]),
        &flat(&xs_serial[mine.clone()]),
    )?;
    log.check_exact(r, "my velocities", &flat3(&vs), &flat3(&vs_serial[mine]))?;
    log.checks
        .push(format!("{NBODY_STEPS} steps of dt = {NBODY_DT}"));
    log.finish(k, n)
}

// ---------------------------------------------------------------------------------
// Transpose.

/// Entry (i, j) of the matrix to transpose (distinct values, so a misplaced block shows).
fn transpose_entry(n: usize, i: usize, j: usize) -> f64 {
    (i * n + j) as f64 + unit(0x5EED_7A05, (i * n + j) as u64)
}

/// Transpose of an n×n matrix distributed in block rows (rank r holds rows r·b..(r+1)·b,
/// b = ⌈n/k⌉, the matrix padded with zeros to k·b): rank r sends its b×b block j,
/// transposed, to rank j in one all-to-all (`algo`), and the blocks it receives are its
/// block row of the transpose. Checks against the serial transpose (exactly: only data
/// moves).
///
/// Seed 004 (Saad & Schultz, §1): transposing a matrix distributed by rows is a
/// total exchange (all-to-all personalised communication).
pub fn transpose<X: Transport>(
    comm: &mut Comm<X>,
    n: usize,
    algo: Algo,
) -> Result<Summary, String> {
    let (k, r) = (comm.size(), comm.rank());
    let blocks = Blocks::new(n, k);
    let (b, kk) = (blocks.b, k as usize);
    let mut log = Log::new("transpose", OpKind::Alltoall);
    let entry = |i: usize, j: usize| {
        if i < n && j < n {
            transpose_entry(n, i, j)
        } else {
            0.0
        }
    };
    // My block row, b × k·b, row-major.
    let row0 = r as usize * b;
    let width = kk * b;
    let local: Vec<f64> = (0..b * width)
        .map(|e| entry(row0 + e / width, e % width))
        .collect();
    // Block j of the send buffer: the b×b block of columns j·b.., transposed.
    let mut send = vec![0.0; b * width];
    for j in 0..kk {
        for a in 0..b {
            for c in 0..b {
                send[j * b * b + c * b + a] = local[a * width + j * b + c];
            }
        }
    }
    let mut recv = vec![0.0; b * width];
    let got = comm.all_to_all_into(&send, &mut recv, algo);
    log.note("all-to-all of the blocks", got)?;
    // Block i of recv is rank i's block r, transposed: rows c, columns i·b + a.
    let mut t = vec![0.0; b * width];
    for i in 0..kk {
        for c in 0..b {
            for a in 0..b {
                t[c * width + i * b + a] = recv[i * b * b + c * b + a];
            }
        }
    }
    // Serial check: my block row of the transpose, exactly.
    let want: Vec<f64> = (0..b * width)
        .map(|e| entry(e % width, row0 + e / width))
        .collect();
    log.check_exact(r, "my block row of Aᵀ", &t, &want)?;
    log.finish(k, n)
}

// ---------------------------------------------------------------------------------
// Bucket sort.

/// Key `i` of the bucket sort: a 32-bit integer, squared from uniform so that the low
/// buckets fill most (uneven counts: the alltoallv's reason to exist).
fn bucket_key(i: usize) -> u64 {
    let u = mix(0x5EED_B0C7, i as u64) >> 32;
    (u * u) >> 32
}

/// Parallel bucket sort of n keys held in blocks (rank r holds `Blocks::range(r)`):
/// rank b's bucket holds the keys in [b·2^32/k, (b + 1)·2^32/k). Each rank counts its
/// keys per bucket, the counts go all-to-all (each rank learns what it will receive),
/// the keys go by alltoallv (`algo`) with those uneven counts, and each rank sorts its
/// bucket. The keys are skewed (a uniform value squared), so low buckets get most and
/// some counts are zero. Checked exactly against the serial sort's slice of rank r's
/// bucket.
///
/// The exchange pattern of sample sort and of radix sort's scatter (MPI-3.1, §5.8,
/// `MPI_Alltoallv`; Blelloch et al. 1991 for the sample sort).
pub fn bucket_sort<X: Transport>(
    comm: &mut Comm<X>,
    n: usize,
    algo: Algo,
) -> Result<Summary, String> {
    let (k, r) = (comm.size(), comm.rank());
    let kk = k as usize;
    let blocks = Blocks::new(n, k);
    let mut log = Log::new("bucket_sort", OpKind::Alltoallv);
    let bucket = |key: u64| ((key * k as u64) >> 32) as usize;
    // My keys, grouped by bucket (a stable sort by bucket).
    let mut mine: Vec<u64> = blocks.range(r).map(bucket_key).collect();
    mine.sort_by_key(|&key| bucket(key));
    let mut send_counts = vec![0usize; kk];
    for &key in &mine {
        send_counts[bucket(key)] += 1;
    }
    // Every rank learns how many keys it gets from each (one count per pair).
    let sc: Vec<u64> = send_counts.iter().map(|&c| c as u64).collect();
    let mut rc = vec![0u64; kk];
    let got = comm.all_to_all_into(&sc, &mut rc, Algo::Auto);
    log.note("all-to-all of the bucket counts", got)?;
    let recv_counts: Vec<usize> = rc.iter().map(|&c| c as usize).collect();
    let mut bucket_keys = vec![0u64; recv_counts.iter().sum()];
    let got = comm.all_to_allv_into(&mine, &send_counts, &mut bucket_keys, &recv_counts, algo);
    log.note("alltoallv of the keys", got)?;
    bucket_keys.sort_unstable();
    // Serial check: the sorted keys of my bucket, exactly.
    let mut all: Vec<u64> = (0..n).map(bucket_key).collect();
    all.sort_unstable();
    let want: Vec<u64> = all
        .into_iter()
        .filter(|&key| bucket(key) == r as usize)
        .collect();
    log.check_exact(r, "my bucket, sorted", &bucket_keys, &want)?;
    log.finish(k, n)
}

// ---------------------------------------------------------------------------------
// Prefix sums.

/// Length of the vectors of the element-wise scans.
pub const SCAN_WIDTH: usize = 8;

/// Element `i` of the array to prefix-sum: an integer in [−1000, 1000].
fn scan_value(i: usize) -> i64 {
    (mix(0x5EED_0001, i as u64) % 2001) as i64 - 1000
}

/// Prefix sums of an n-element array distributed in blocks (rank r holds
/// `Blocks::range(r)`): each rank sums its block, an exclusive scan (`algo`) of the
/// block sums gives its offset, and the local prefix sums plus the offset are the global
/// inclusive prefix sums (exclusive ones: minus the element). The inclusive scan
/// (`algo`) of the block sums must be the offset plus the block sum. Then both scans
/// element-wise on a vector of `SCAN_WIDTH` values per rank (the pattern of a
/// distributed histogram's offsets). Integers, so every check is exact.
///
/// Seed 001: prefix sums (scan) over a distributed array, the building block of
/// parallel sorting, packing and recurrences.
pub fn prefix_sums<X: Transport>(
    comm: &mut Comm<X>,
    n: usize,
    algo: Algo,
) -> Result<Summary, String> {
    let (k, r) = (comm.size(), comm.rank());
    let blocks = Blocks::new(n, k);
    let mine = blocks.range(r);
    let mut log = Log::new("prefix_sums", OpKind::ExclusiveScan);
    let sum = Op::<i64>::sum();
    let local: Vec<i64> = mine.clone().map(scan_value).collect();
    let mut incl_local = local.clone();
    for i in 1..incl_local.len() {
        incl_local[i] += incl_local[i - 1];
    }
    let total = incl_local.last().copied().unwrap_or(0);
    let mut offset = [0i64];
    let got = comm.exclusive_scan_into(&[total], &mut offset, &sum, algo);
    log.note("exclusive scan of the block sums", got)?;
    if r == 0 {
        offset[0] = 0; // rank 0's exclusive scan is unspecified; its offset is 0
    }
    let mut upto = [0i64];
    let got = comm.scan_into(&[total], &mut upto, &sum, algo);
    log.note("inclusive scan of the block sums", got)?;
    if upto[0] != offset[0] + total {
        return Err(format!(
            "prefix_sums: MISMATCH on rank {r}: inclusive scan {} ≠ exclusive scan {} + block sum {total}",
            upto[0], offset[0]
        ));
    }
    let inclusive: Vec<i64> = incl_local.iter().map(|s| s + offset[0]).collect();
    let exclusive: Vec<i64> = inclusive.iter().zip(&local).map(|(s, x)| s - x).collect();
    // Serial check of my block.
    let mut want_incl = Vec::with_capacity(n);
    let mut acc = 0i64;
    for i in 0..n {
        acc += scan_value(i);
        want_incl.push(acc);
    }
    let want_excl: Vec<i64> = (0..n).map(|i| want_incl[i] - scan_value(i)).collect();
    log.check_exact(
        r,
        "inclusive prefix sums of my block",
        &inclusive,
        &want_incl[mine.clone()],
    )?;
    log.check_exact(
        r,
        "exclusive prefix sums of my block",
        &exclusive,
        &want_excl[mine],
    )?;

    // Element-wise scans of one vector per rank.
    let vector = |q: u32| -> Vec<i64> {
        (0..SCAN_WIDTH)
            .map(|j| scan_value(n + q as usize * SCAN_WIDTH + j))
            .collect()
    };
    let mine_v = vector(r);
    let (mut incl_v, mut excl_v) = (vec![0i64; SCAN_WIDTH], vec![0i64; SCAN_WIDTH]);
    let got = comm.scan_into(&mine_v, &mut incl_v, &sum, algo);
    log.note("inclusive scan of vectors", got)?;
    let got = comm.exclusive_scan_into(&mine_v, &mut excl_v, &sum, algo);
    log.note("exclusive scan of vectors", got)?;
    let mut want_v = vec![0i64; SCAN_WIDTH];
    for q in 0..r {
        for (w, x) in want_v.iter_mut().zip(vector(q)) {
            *w += x;
        }
    }
    if r > 0 {
        log.check_exact(r, "element-wise exclusive scan", &excl_v, &want_v)?;
    }
    for (w, x) in want_v.iter_mut().zip(&mine_v) {
        *w += x;
    }
    log.check_exact(r, "element-wise inclusive scan", &incl_v, &want_v)?;
    log.finish(k, n)
}

// ---------------------------------------------------------------------------------
// Running on the threads backend.

/// The example's `main`: `[ranks] [algorithm] [n]` from argv (defaults 4, auto,
/// `default_n`); runs `kernel` on threads, prints rank 0's summary, and exits 1 with the
/// failing rank's message on a mismatch (2 on bad arguments).
pub fn main<F>(name: &str, kernel: F, default_n: usize) -> std::process::ExitCode
where
    F: Fn(&mut Comm<Threads<'_>>, usize, Algo) -> Result<Summary, String> + Sync,
{
    use std::process::ExitCode;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = || {
        eprintln!("usage: cargo run -p hypercomm-rt --example {name} -- [ranks (4)] [algorithm (auto)] [n ({default_n})]");
        ExitCode::from(2)
    };
    let ranks: u32 = match args.first().map(|s| s.parse()) {
        None => 4,
        Some(Ok(k)) if k > 0 => k,
        _ => return usage(),
    };
    let algo_name = args.get(1).map_or("auto", String::as_str);
    let n: usize = match args.get(2).map(|s| s.parse()) {
        None => default_n,
        Some(Ok(n)) if n > 0 => n,
        _ => return usage(),
    };
    let algo = Algo::from(algo_name);
    match threads::run(ranks, |comm| kernel(comm, n, algo)) {
        Ok(summaries) => {
            print!("{}", summaries[0]);
            println!("{name}: every rank matched the serial computation");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{name}: FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Run `kernel` (size `n`) on 1, 3, 4 and 5 ranks, with `Algo::Auto` and with every
/// algorithm of `main` that fits the rank count, then with `Algo::Auto` at size k − 1
/// (a rank with nothing of its own); panics with the failure.
pub fn test_kernel<F>(kernel: F, main: OpKind, n: usize)
where
    F: Fn(&mut Comm<Threads<'_>>, usize, Algo) -> Result<Summary, String> + Sync,
{
    use hypercomm::topology::Topology;
    for k in [1u32, 3, 4, 5] {
        let fitting = hypercomm::algorithms::fitting(&Topology::complete(k), main);
        let names = std::iter::once("auto").chain(fitting.iter().map(|a| a.name));
        for name in names {
            let algo = Algo::from(name);
            let summaries = threads::run(k, |comm| kernel(comm, n, algo))
                .unwrap_or_else(|e| panic!("{k} ranks, {name}: {e}"));
            let s = &summaries[0];
            assert_eq!(s.ranks, k);
            if name != "auto" {
                assert_eq!(s.main.algorithm, name, "{k} ranks: asked for {name}");
            }
        }
        if k > 1 {
            let small = k as usize - 1;
            threads::run(k, |comm| kernel(comm, small, Algo::Auto))
                .unwrap_or_else(|e| panic!("{k} ranks, n = {small}: {e}"));
        }
    }
}
