//! `hypercomm verify`: read a schedule file, verify it and time it, and report as
//! `simulate` does. The closed forms are not evaluated: a file does not say how many
//! packets a pipelined algorithm used.

use std::io::Read;
use std::path::Path;

use hypercomm::error::Error;
use hypercomm::schedule::json::Document;
use hypercomm::schedule::{Op, Program, Region};
use hypercomm::verify::Problem;

use crate::args::VerifyArgs;
use crate::config::{self, MAX_ELEMENTS};
use crate::report::{self, RunReport};
use crate::{simulate, CliError, Io, Outcome};

/// Read the schedule file, `-` meaning stdin.
pub fn read(path: &Path) -> Result<String, CliError> {
    let mut text = String::new();
    let result = if path.as_os_str() == "-" {
        std::io::stdin().read_to_string(&mut text).map(|_| ())
    } else {
        std::fs::read_to_string(path).map(|t| text = t)
    };
    result.map_err(|source| CliError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(text)
}

fn malformed(path: String, reason: String) -> Error {
    Error::MalformedSchedule { path, reason }
}

/// Parse a document and check the sizes the verifier and the simulator rely on: the
/// length of the collective, every `tmp_len`, and every region's end stay below
/// 2^53 elements.
pub fn parse(text: &str) -> Result<Document, Error> {
    let doc = Document::parse(text)?;
    config::check_len(&doc.topology, doc.collective.kind(), doc.len)
        .map_err(|e| malformed("len".into(), e.to_string()))?;
    for (i, prog) in doc.programs.iter().enumerate() {
        check_program(i, prog)?;
    }
    Ok(doc)
}

fn check_program(i: usize, prog: &Program) -> Result<(), Error> {
    if prog.tmp_len > MAX_ELEMENTS {
        return Err(malformed(
            format!("programs[{i}].tmp_len"),
            format!("{} elements; valid: 0..=2^53", prog.tmp_len),
        ));
    }
    for (s, step) in prog.steps.iter().enumerate() {
        for (o, op) in step.ops.iter().enumerate() {
            let bad = regions(op).find(|r| r.end() > MAX_ELEMENTS);
            if let Some(r) = bad {
                return Err(malformed(
                    format!("programs[{i}].steps[{s}][{o}]"),
                    format!(
                        "region of `{}` at {} of {} elements ends past 2^53",
                        r.buf.name(),
                        r.off,
                        r.len
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The regions an op reads or writes.
fn regions(op: &Op) -> Box<dyn Iterator<Item = &Region> + '_> {
    match op {
        Op::Send { from, .. } => Box::new(from.iter()),
        Op::Recv { into, .. } => Box::new(into.iter()),
        Op::Local { from, into, .. } => Box::new([from, into].into_iter()),
    }
}

/// Verify and time a document under the arguments' model.
pub fn evaluate(doc: &Document, args: &VerifyArgs) -> Result<RunReport, Error> {
    let model = config::model_on(&args.model, &doc.topology)?;
    let strictness = config::strictness(args.strict, &model);
    let problem = Problem {
        topology: &doc.topology,
        collective: doc.collective,
        len: doc.len,
        commutative: doc.commutative,
        counts: doc.counts.as_ref(),
    };
    problem.check_counts()?;
    let mut report = RunReport::blank(&problem, doc.algo.as_deref(), &model, args.strict);
    if let Some(algo) = doc
        .algo
        .as_deref()
        .and_then(|name| hypercomm::algorithms::find(doc.collective.kind(), name))
    {
        config::check_verify_memory(algo, doc.programs.len() as u32)?;
    }
    let progs = &doc.programs;
    report::evaluate_programs(
        &mut report,
        problem,
        progs,
        doc.steps,
        &model,
        Some(strictness),
    );
    report::check_finite(&report)?;
    Ok(report)
}

/// Run the command.
pub fn run(args: &VerifyArgs, io: &mut Io<'_>) -> Result<Outcome, CliError> {
    config::model(&args.model)?;
    let text = read(&args.schedule)?;
    let doc = parse(&text)?;
    let report = evaluate(&doc, args)?;
    simulate::write_report(&report, args.format, io)
}
