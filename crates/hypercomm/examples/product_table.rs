//! The table of docs/product.md: Algorithm A2 (seed 002) against the bound T ≥ ⌈AS(G)⌉
//! in the paper's model (`--ports one`, full duplex, β = 0, τ = 1, one element per
//! block), every schedule verified and simulated:
//! `cargo run --release -p hypercomm --example product_table`.
//!
//! `tests/product_table.rs` includes this file and checks that docs/product.md holds
//! its output.

use hypercomm::algorithms::alltoall::{a2, factor_exchange::path_receive_bound};
use hypercomm::algorithms::{self, Params};
use hypercomm::bounds::{average_status, lower_bound};
use hypercomm::cost::model::Ports;
use hypercomm::prelude::*;
use hypercomm::topology::Factor;

/// The topologies of the table, in order.
pub const TOPOLOGIES: &[&str] = &[
    "ring:4",
    "ring:5",
    "ring:6",
    "ring:7",
    "ring:8",
    "torus:3x4",
    "torus:4x4",
    "torus:3x5",
    "torus:6x7",
    "torus:3x3x3",
    "torus:4x4x4",
    "ghc:3x4",
    "hypercube:1",
    "hypercube:2",
    "hypercube:3",
    "hypercube:4",
    "hypercube:5",
    "hypercube:6",
    "path:3",
    "path:4",
    "mesh:3x3",
    "mesh:4x4",
];

/// One row: the topology, N, AS(G), the bound, A2's simulated time, Corollary 2's
/// value, and (on meshes) the paths' own receive bound composed by Corollary 2.
fn row(t: &str) -> String {
    let topo: Topology = t.parse().expect("a valid topology");
    let model = Model {
        ports: Ports::One,
        ..Model::new(0.0, 1.0).expect("β = 0, τ = 1")
    };
    let problem = Problem {
        topology: &topo,
        collective: Collective::Alltoall,
        len: 1,
        commutative: true,
        counts: None,
    };
    let params = Params {
        model,
        ..Params::default()
    };
    let algo = algorithms::find(OpKind::Alltoall, "a2").expect("registered");
    let s = algo.build(&problem, &params).expect("A2 fits");
    verify(problem, s.as_ref(), Strictness::default()).expect("A2 verifies");
    let time = simulate(&topo, s.as_ref(), &model).time;
    let formula = algo.formulas(&problem, &params)[0].value;
    assert_eq!(time, formula, "{t}: Corollary 2");
    assert_eq!(Some(time as u64), a2::steps(&topo));
    let bound = lower_bound(&topo, &Collective::Alltoall, 1, &model).expect("a bound");
    let n = topo.nodes() as u64;
    let paths = topo
        .factors()
        .expect("a product")
        .iter()
        .all(|f| matches!(f, Factor::Path(k) if *k >= 3));
    let receive = if paths {
        // Corollary 2 with each path's optimum, max_i f(i).
        let fs = topo.factors().expect("a product");
        let t: u64 = fs
            .iter()
            .map(|f| n / f.nodes() as u64 * path_receive_bound(f.nodes()))
            .sum();
        t.to_string()
    } else {
        "=".into()
    };
    let gap = time - bound;
    format!(
        "| {t} | {n} | {:.4} | {bound} | {time} | {receive} | {} |",
        average_status(&topo),
        if gap == 0.0 {
            "0 (meets it)".to_string()
        } else {
            format!("+{gap} ({:+.1} %)", 100.0 * gap / bound)
        }
    )
}

/// The whole table, header included.
pub fn table() -> String {
    let mut out = String::from(
        "| topology | N | AS(G) | bound ⌈AS(G)⌉ | A2 (simulated, verified) | A2 from each path's optimum | A2 − bound |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for t in TOPOLOGIES {
        out.push_str(&row(t));
        out.push('\n');
    }
    out
}

#[allow(dead_code)] // a test includes this file as a module
fn main() {
    print!("{}", table());
}
