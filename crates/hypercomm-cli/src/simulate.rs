//! `hypercomm simulate`: build one algorithm's schedule, verify it, time it, and set it
//! beside its closed forms and a lower bound.

use hypercomm::algorithms::Packets;
use hypercomm::error::Error;

use crate::args::{Format, SimulateArgs};
use crate::config::{self, RunConfig};
use crate::report::{self, RunReport};
use crate::{output, CliError, Io, Outcome};

/// Validate the arguments into a run.
pub fn configure(args: &SimulateArgs) -> Result<RunConfig, Error> {
    let problem = config::problem(&args.problem)?;
    let model = config::model_on(&args.model, &problem.topology)?;
    let packets: Packets = args.packets.parse()?;
    let algo = config::algorithm(&problem, &args.algo)?;
    Ok(config::run(problem, algo, packets, model, &args.check))
}

/// Run the command.
pub fn run(args: &SimulateArgs, io: &mut Io<'_>) -> Result<Outcome, CliError> {
    let cfg = configure(args)?;
    let report = report::run(&cfg)?;
    write_report(&report, args.format, io)
}

/// Write one run's report in `format`; a violation is repeated on stderr.
pub fn write_report(
    report: &RunReport,
    format: Format,
    io: &mut Io<'_>,
) -> Result<Outcome, CliError> {
    let text = match format {
        Format::Text => output::run_text(report),
        Format::Json => output::json(report),
    };
    io.out.write_all(text.as_bytes())?;
    io.out.flush()?;
    match &report.violation {
        Some(v) => {
            let _ = writeln!(io.err, "error: verification failed: {}", v.message);
            Ok(Outcome::Failed)
        }
        None if report.failed() => Ok(Outcome::Failed),
        None => Ok(Outcome::Ok),
    }
}
