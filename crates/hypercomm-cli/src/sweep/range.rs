//! The values of `--len` and `--dims` in `hypercomm sweep`: one number `M`, an
//! arithmetic range `A..B` or `A..B:STEP`, a geometric range `A..BxF`, or a list
//! `A,B,C`. Ranges are inclusive and stop at the last value ≤ B. Each number is spelt
//! as a single `--len` elsewhere takes it ([`crate::args::whole`]: digits or an
//! integral scientific form, `1e3..1e6x10`); the factor F is any number > 1.

use hypercomm::error::Error;

use crate::args::whole;

/// Most points a sweep may have.
pub const MAX_POINTS: u64 = 10_000;

/// The accepted forms, for error messages.
const SYNTAX: &str = "valid: M, A..B, A..B:STEP (STEP ≥ 1), A..BxF (A ≥ 1, F > 1) or a list A,B,C";

/// The values of a range, ascending and distinct.
#[derive(Clone, Debug, PartialEq)]
pub struct Values {
    /// The values.
    pub values: Vec<u64>,
    /// Whether they grow geometrically (plotted on a log axis).
    pub geometric: bool,
}

/// Parse `spec`, the value of the option `what`.
pub fn parse(what: &'static str, spec: &str) -> Result<Values, Error> {
    let spec = spec.trim();
    let values = if spec.contains(',') {
        list(what, spec)?
    } else if let Some((a, rest)) = spec.split_once("..") {
        let a = number(what, a, spec)?;
        if let Some((b, f)) = rest.split_once(['x', 'X']) {
            let (b, f) = (number(what, b, spec)?, factor(what, f, spec)?);
            return geometric(what, spec, [a, b], f);
        }
        let (b, step) = match rest.split_once(':') {
            Some((b, step)) => (b, number(what, step, spec)?),
            None => (rest, 1),
        };
        arithmetic(what, spec, [a, number(what, b, spec)?], step)?
    } else {
        vec![number(what, spec, spec)?]
    };
    Ok(Values {
        values,
        geometric: false,
    })
}

fn invalid(what: &'static str, reason: String) -> Error {
    Error::InvalidParameter { what, reason }
}

/// A whole number ≥ 0 that is part of `spec`, spelt as a single `--len` of the other
/// commands takes it ([`whole`]: `1e3` was refused here, though `--len 1e3` is accepted
/// there).
fn number(what: &'static str, s: &str, spec: &str) -> Result<u64, Error> {
    whole(s.trim()).map_err(|e| invalid(what, format!("`{spec}`: {e}; {SYNTAX}")))
}

/// The factor of a geometric range: a finite number > 1.
fn factor(what: &'static str, s: &str, spec: &str) -> Result<f64, Error> {
    match s.trim().parse::<f64>() {
        Ok(f) if f.is_finite() && f > 1.0 => Ok(f),
        Ok(_) => Err(invalid(
            what,
            format!("`{spec}`: the factor must be > 1; {SYNTAX}"),
        )),
        Err(_) => Err(invalid(
            what,
            format!("`{spec}`: `{}` is not a number; {SYNTAX}", s.trim()),
        )),
    }
}

/// Refuse more than [`MAX_POINTS`] points.
fn check_count(what: &'static str, spec: &str, count: u64) -> Result<(), Error> {
    if count > MAX_POINTS {
        return Err(invalid(
            what,
            format!("`{spec}` has {count} points, more than {MAX_POINTS}; use a larger step"),
        ));
    }
    Ok(())
}

/// Refuse a range whose end is below its start.
fn check_order(what: &'static str, spec: &str, a: u64, b: u64) -> Result<(), Error> {
    if b < a {
        return Err(invalid(
            what,
            format!("`{spec}` is empty: the end {b} is below the start {a}"),
        ));
    }
    Ok(())
}

/// A comma-separated list, sorted and without repeats.
fn list(what: &'static str, spec: &str) -> Result<Vec<u64>, Error> {
    let mut values = spec
        .split(',')
        .map(|s| number(what, s, spec))
        .collect::<Result<Vec<u64>, Error>>()?;
    values.sort_unstable();
    values.dedup();
    check_count(what, spec, values.len() as u64)?;
    Ok(values)
}

/// `a, a + step, …` up to `b`; `spec` is the range as given.
fn arithmetic(
    what: &'static str,
    spec: &str,
    [a, b]: [u64; 2],
    step: u64,
) -> Result<Vec<u64>, Error> {
    check_order(what, spec, a, b)?;
    if step == 0 {
        return Err(invalid(what, format!("`{spec}`: the step must be ≥ 1")));
    }
    // `0..u64::MAX` with step 1 has 2^64 points: past any count, not a wrap to 0.
    let count = ((b - a) / step).saturating_add(1);
    check_count(what, spec, count)?;
    Ok((0..count).map(|i| a + i * step).collect())
}

/// `a, a·f, a·f², …` (rounded, repeats dropped) up to `b`; `spec` is the range as given.
fn geometric(what: &'static str, spec: &str, [a, b]: [u64; 2], f: f64) -> Result<Values, Error> {
    check_order(what, spec, a, b)?;
    if a == 0 {
        return Err(invalid(
            what,
            format!("`{spec}`: a geometric range must start at 1 or more"),
        ));
    }
    let steps = ((b as f64 / a as f64).ln() / f.ln()).floor() as u64;
    check_count(what, spec, steps.saturating_add(1))?;
    let mut values: Vec<u64> = Vec::new();
    for k in 0..=steps.saturating_add(1) {
        let v = (a as f64 * f.powi(k as i32)).round();
        if v > b as f64 {
            break;
        }
        // `None < Some(_)`: the first value, or one past the last.
        if values.last() < Some(&(v as u64)) {
            values.push(v as u64);
        }
    }
    Ok(Values {
        values,
        geometric: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(s: &str) -> Vec<u64> {
        parse("--len", s).unwrap().values
    }

    #[test]
    fn forms() {
        assert_eq!(values("7"), [7]);
        assert_eq!(values("1..4"), [1, 2, 3, 4]);
        assert_eq!(values("100..1000:300"), [100, 400, 700, 1000]);
        assert_eq!(values("100..999:300"), [100, 400, 700]);
        assert_eq!(values("1..64x2"), [1, 2, 4, 8, 16, 32, 64]);
        assert_eq!(values("1..100x10"), [1, 10, 100]);
        assert_eq!(values("1..5x1.5"), [1, 2, 3, 5]);
        assert_eq!(values("1000, 1,7,7"), [1, 7, 1000]);
        assert!(parse("--len", "1..8x2").unwrap().geometric);
        // Numbers as a single `--len` takes them; `x` still starts the factor.
        assert_eq!(values("1e3"), [1000]);
        assert_eq!(values("1e3..1e4x10"), [1000, 10_000]);
        assert_eq!(values("1e3..3e3:1e3"), [1000, 2000, 3000]);
        assert_eq!(values("1E2,2e2"), [100, 200]);
        assert!(parse("--len", "1e3..1e4x10").unwrap().geometric);
        assert!(!parse("--len", "1..8").unwrap().geometric);
    }

    #[test]
    fn errors_name_the_problem() {
        let err = |s: &str| parse("--len", s).unwrap_err().to_string();
        assert!(err("10..1").contains("empty"));
        // 2^64 points: counted past the limit, not wrapped to none (a panic after).
        assert!(err("0..18446744073709551615").contains("points, more than"));
        assert!(err("x").contains("not a whole number"));
        assert!(err("1.5e0..9").contains("not a whole number"));
        assert!(err("1..-5").contains("negative"));
        assert!(err("1..1e20").contains("above"));
        assert!(err("1..10:0").contains("step must be ≥ 1"));
        assert!(err("1..10x1").contains("factor must be > 1"));
        assert!(err("1..10x0.5").contains("factor must be > 1"));
        assert!(err("0..10x2").contains("start at 1"));
        assert!(err("0..10000").contains("more than 10000"));
        assert!(err("1..1000000x1.0001").contains("more than 10000"));
        assert_eq!(values("0..9999").len(), 10_000);
    }
}
