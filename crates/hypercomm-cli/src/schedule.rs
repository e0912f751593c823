//! `hypercomm schedule`: one algorithm's schedule as JSON, in the documented format
//! that `hypercomm verify --schedule` reads.

use hypercomm::algorithms::Packets;
use hypercomm::schedule::json::Document;

use crate::args::ScheduleArgs;
use crate::config;
use crate::{CliError, Io, Outcome};

/// Run the command.
pub fn run(args: &ScheduleArgs, io: &mut Io<'_>) -> Result<Outcome, CliError> {
    let problem = config::problem(&args.problem)?;
    let model = config::model_on(&args.model, &problem.topology)?;
    let packets: Packets = args.packets.parse()?;
    let algo = config::algorithm(&problem, &args.algo)?;
    let params = config::params_for(algo, packets, model);
    let p = problem.problem();
    let schedule = algo.build(&p, &params)?;
    let (nodes, steps) = (schedule.nodes(), schedule.steps());
    config::check_size(nodes, steps, config::MAX_MATERIALIZED, config::HINT_PRINT)?;
    let doc = Document {
        counts: problem.counts.clone(),
        ..Document::new(
            problem.topology.clone(),
            problem.collective,
            problem.len,
            Some(algo.name),
            p.commutative,
            schedule.as_ref(),
        )
    };
    let mut json = doc.to_json();
    json.push('\n');
    io.out.write_all(json.as_bytes())?;
    io.out.flush()?;
    Ok(Outcome::Ok)
}
