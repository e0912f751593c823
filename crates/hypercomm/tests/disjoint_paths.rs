//! Node-disjoint paths on product networks (issue 16, item 1), checked exhaustively on
//! small products: every path runs from a to b over links without repeating a node,
//! no two share an inner node, and there are as many as the factors promise,
//! Σ_{i∈D} κ_i + Σ_{j∉D} deg_j(a_j) (D the coordinates in which a and b differ), which
//! is the degree, Menger's most, when every factor is vertex-transitive.

use std::collections::HashSet;

use hypercomm::topology::Topology;

fn topo(s: &str) -> Topology {
    s.parse().unwrap()
}

/// The paths' count from the factors: κ of each differing factor, the degree at a of
/// each other.
fn promised(t: &Topology, a: u32, b: u32) -> usize {
    let (ca, cb) = (t.coords(a), t.coords(b));
    t.factors()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            if ca[i] != cb[i] {
                f.connectivity() as usize
            } else {
                f.neighbors(ca[i]).len()
            }
        })
        .sum()
}

#[test]
fn product_disjoint_paths_are_as_many_as_the_factors_allow() {
    let mut multi = 0;
    for s in [
        "torus:3x3",
        "torus:3x4",
        "torus:4x5",
        "torus:3x3x3",
        "torus:2x3x4",
        "mesh:3x3",
        "mesh:2x3x4",
        "ghc:3x4",
        "ghc:2x3x3",
        "ring:5*complete:3",
        "ring:2*ring:5",
        "path:3*ring:4",
        "complete:4*path:3",
        "torus:4x4*hypercube:2",
        "hypercube:3*complete:3",
        "ring:5*mesh:2x3",
    ] {
        let t = topo(s);
        let regular = !s.contains("path") && !s.contains("mesh");
        for a in 0..t.nodes() {
            for b in 0..t.nodes() {
                let paths = t.disjoint_paths(a, b).unwrap();
                if a == b {
                    assert_eq!(paths, vec![vec![a]], "{s}");
                    continue;
                }
                let mut inner = HashSet::new();
                for p in &paths {
                    assert_eq!((p[0], *p.last().unwrap()), (a, b), "{s}: {p:?}");
                    assert!(
                        p.windows(2).all(|w| t.are_linked(w[0], w[1])),
                        "{s}: {p:?} leaves the links"
                    );
                    let own: HashSet<u32> = p.iter().copied().collect();
                    assert_eq!(own.len(), p.len(), "{s}: {p:?} repeats a node");
                    for &x in &p[1..p.len() - 1] {
                        assert!(inner.insert(x), "{s}: {a} → {b}: {x} twice in {paths:?}");
                    }
                }
                assert!(!inner.contains(&a) && !inner.contains(&b), "{s}");
                assert_eq!(paths.len(), promised(&t, a, b), "{s}: {a} → {b}: {paths:?}");
                let most = t.neighbors(a).len().min(t.neighbors(b).len());
                assert!(paths.len() <= most, "{s}: {a} → {b}");
                if regular {
                    assert_eq!(paths.len(), most, "{s}: {a} → {b}: {paths:?}");
                }
                let (ca, cb) = (t.coords(a), t.coords(b));
                if ca.iter().zip(&cb).filter(|(x, y)| x != y).count() >= 2 {
                    multi += 1;
                }
            }
        }
    }
    // Most pairs differ in two or more coordinates: the case the factors' own paths
    // and the one-coordinate detours do not cover.
    assert!(multi > 5000, "{multi}");
}

/// Where no product is: media and hosts have none.
#[test]
fn media_and_hosts_have_no_disjoint_paths() {
    for s in [
        "bus:4",
        "shm:4,2",
        "switch:4",
        "hypercube:2+host",
        "ring:4+host@0",
    ] {
        assert!(topo(s).disjoint_paths(0, 1).is_none(), "{s}");
    }
}
