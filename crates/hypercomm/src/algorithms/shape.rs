//! A layout of K ranks as a product shape n_1 × … × n_d (`--shape AxB…`): rank r has
//! coordinates in row-major order, the last factor fastest, as product topologies
//! number their nodes. The decomposed collectives (`product`) exchange one dimension
//! at a time along it (seed 002's decomposition on virtual factors K_{n_i}).
//!
//! A shape may hold 1s (a factor of one rank is no exchange at all), so a prime K runs
//! as `1xK`; it never holds a 0, and its product must be the number of ranks
//! ([`Shape::check`]).

use std::fmt;
use std::str::FromStr;

use crate::error::Error;

/// Most factors in a shape: K < 2^32 has at most 32 factors ≥ 2.
pub const MAX_SHAPE_FACTORS: usize = 32;

/// A product shape n_1 × … × n_d, each n_i ≥ 1 (`Copy`: at most
/// [`MAX_SHAPE_FACTORS`] factors, held in line).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shape {
    factors: [u32; MAX_SHAPE_FACTORS],
    len: u8,
}

impl Shape {
    /// The shape of `factors` (each ≥ 1, at most [`MAX_SHAPE_FACTORS`] of them).
    pub fn new(factors: &[u32]) -> Result<Shape, Error> {
        let bad = |why: String| Error::InvalidParameter {
            what: "--shape",
            reason: format!(
                "{}: {why}; valid: factors ≥ 1 joined by x, e.g. 2x3",
                join(factors)
            ),
        };
        if factors.is_empty() {
            return Err(bad("no factor".into()));
        }
        if factors.len() > MAX_SHAPE_FACTORS {
            return Err(bad(format!(
                "{} factors, more than {MAX_SHAPE_FACTORS}",
                factors.len()
            )));
        }
        if factors.contains(&0) {
            return Err(bad("a factor of 0".into()));
        }
        let mut s = Shape {
            factors: [0; MAX_SHAPE_FACTORS],
            len: factors.len() as u8,
        };
        s.factors[..factors.len()].copy_from_slice(factors);
        Ok(s)
    }

    /// The factors, first (slowest) first.
    pub fn factors(&self) -> &[u32] {
        &self.factors[..self.len as usize]
    }

    /// The number of ranks the shape lays out (`None` past 2^32 − 1).
    pub fn ranks(&self) -> Option<u32> {
        self.factors()
            .iter()
            .try_fold(1u32, |a, &b| a.checked_mul(b))
    }

    /// `Ok` when the shape lays out exactly `k` ranks; the error names both.
    pub fn check(&self, k: u32) -> Result<(), Error> {
        check(self.factors(), k)
    }
}

/// `Ok` when `factors` (each ≥ 1) multiply to `k`: the shape of `k` ranks.
pub fn check(factors: &[u32], k: u32) -> Result<(), Error> {
    let product = factors.iter().try_fold(1u32, |a, &b| a.checked_mul(b));
    if factors.contains(&0) || factors.is_empty() {
        return Err(Error::InvalidParameter {
            what: "--shape",
            reason: format!(
                "{}: factors must be ≥ 1 and at least one; valid: e.g. 2x3",
                join(factors)
            ),
        });
    }
    if product != Some(k) {
        return Err(Error::InvalidParameter {
            what: "--shape",
            reason: format!(
                "{} multiplies to {}, not the {k} ranks; valid: factors whose product is {k}",
                join(factors),
                product.map_or("more than 2^32".into(), |p| p.to_string())
            ),
        });
    }
    Ok(())
}

fn join(factors: &[u32]) -> String {
    factors
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join("x")
}

impl std::ops::Deref for Shape {
    type Target = [u32];
    fn deref(&self) -> &[u32] {
        self.factors()
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&join(self.factors()))
    }
}

impl fmt::Debug for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Shape({self})")
    }
}

impl FromStr for Shape {
    type Err = Error;
    /// `AxBxC…`, each a whole number ≥ 1 (`X` too).
    fn from_str(s: &str) -> Result<Shape, Error> {
        let bad = |why: String| Error::InvalidParameter {
            what: "--shape",
            reason: format!("`{s}`: {why}; valid: factors ≥ 1 joined by x, e.g. 2x3"),
        };
        let factors = s
            .split(['x', 'X'])
            .map(|p| match p.trim().parse::<u32>() {
                Ok(0) => Err(bad("a factor of 0".into())),
                Ok(n) => Ok(n),
                Err(_) => Err(bad(format!("`{}` is not a whole number ≥ 1", p.trim()))),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Shape::new(&factors).map_err(|_| {
            bad(format!(
                "{} factors, more than {MAX_SHAPE_FACTORS}",
                factors.len()
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_checks() {
        let s: Shape = "2x3".parse().unwrap();
        assert_eq!(s.factors(), &[2, 3]);
        assert_eq!(s.to_string(), "2x3");
        assert_eq!(s.ranks(), Some(6));
        assert!(s.check(6).is_ok());
        let e = s.check(8).unwrap_err().to_string();
        assert!(e.contains("multiplies to 6, not the 8 ranks"), "{e}");
        assert_eq!("1X7".parse::<Shape>().unwrap().factors(), &[1, 7]);
        for bad in ["2x0", "2xa", "", "x3", "-2x3", "2x3x"] {
            let e = bad.parse::<Shape>().unwrap_err().to_string();
            assert!(e.starts_with("invalid --shape"), "{bad}: {e}");
        }
        assert!("2x0"
            .parse::<Shape>()
            .unwrap_err()
            .to_string()
            .contains("a factor of 0"));
        let many = vec!["1"; 33].join("x");
        assert!(many.parse::<Shape>().is_err());
        let huge: Shape = "65536x65536".parse().unwrap();
        assert_eq!(huge.ranks(), None);
        assert!(huge
            .check(4)
            .unwrap_err()
            .to_string()
            .contains("more than 2^32"));
    }
}
