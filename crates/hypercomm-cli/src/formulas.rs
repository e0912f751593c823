//! `hypercomm formulas`: every registry algorithm's closed forms, evaluated for one
//! problem and model.

use hypercomm::algorithms::{self, Algorithm, Formula, Packets, Params};
use hypercomm::collective::{Collective, OpKind};
use hypercomm::cost::model::Model;
use hypercomm::error::Error;
use hypercomm::topology::Topology;
use hypercomm::verify::Problem;
use serde::Serialize;

use crate::args::{Format, FormulasArgs};
use crate::config;
use crate::report::{ModelOut, PacketsOut};
use crate::{output, CliError, Io, Outcome};

/// The closed forms of one algorithm.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Entry {
    /// The collective.
    pub op: &'static str,
    /// The algorithm.
    pub algo: &'static str,
    /// The collective with its ranks, e.g. `broadcast (root 0)`.
    pub collective: String,
    /// Why the algorithm does not run on the topology, if it does not.
    pub unfit: Option<String>,
    /// Its closed forms that apply to the model (none when it does not fit).
    pub formulas: Vec<Formula>,
}

/// The whole answer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Table {
    /// The topology.
    pub topology: String,
    /// Elements per message.
    pub len: u64,
    /// Packets as requested.
    pub packets: PacketsOut,
    /// The model.
    pub model: ModelOut,
    /// One entry per algorithm.
    pub algorithms: Vec<Entry>,
}

/// The collectives asked for: `--op`, or every one the registry has algorithms for.
fn ops(op: Option<&str>) -> Result<Vec<OpKind>, Error> {
    match op {
        Some(s) => Ok(vec![s.parse()?]),
        None => Ok(OpKind::ALL
            .into_iter()
            .filter(|&k| algorithms::for_op(k).next().is_some())
            .collect()),
    }
}

/// The collective of `kind` for the example: the given root for rooted collectives,
/// p2p from `--src` (default 0) to `--dst` (default the last node).
fn collective(kind: OpKind, topo: &Topology, args: &FormulasArgs) -> Result<Collective, Error> {
    let nodes = topo.nodes();
    let root = if kind.has_root() { args.root } else { None };
    let src = args.src.or(Some(0));
    let dst = args.dst.or(Some(u64::from(nodes) - 1));
    config::check_len(topo, kind, args.len)?;
    Collective::new(kind, nodes, root, src, dst)
}

/// Refuse the rank flags no row uses, as `simulate` does: `--root` beside one
/// collective without a root, `--src`/`--dst` beside one other than p2p (they were
/// ignored). For every collective, a rank past the topology's nodes (each of their rows
/// said "does not fit: root 8 is out of range", exit 0).
fn check_ranks(kinds: &[OpKind], topo: &Topology, args: &FormulasArgs) -> Result<(), Error> {
    let ends = args.src.is_some() || args.dst.is_some();
    if let (Some(_), [kind]) = (&args.op, kinds) {
        return config::check_rank_flags(*kind, args.root.is_some(), ends);
    }
    let nodes = topo.nodes();
    if let Some(root) = args.root {
        Collective::new(OpKind::Broadcast, nodes, Some(root), None, None)?;
    }
    if ends {
        let src = args.src.or(Some(0));
        let dst = args.dst.or(Some(u64::from(nodes) - 1));
        Collective::new(OpKind::P2p, nodes, None, src, dst)?;
    }
    Ok(())
}

fn entry(algo: &Algorithm, problem: &Problem<'_>, packets: Packets, model: Model) -> Entry {
    let params = config::params_for(algo, packets, model);
    let unfit = algo.fits(problem.topology).err();
    let formulas = match unfit {
        Some(_) => Vec::new(),
        None => algo.formulas(problem, &params),
    };
    Entry {
        op: algo.op.name(),
        algo: algo.name,
        collective: problem.collective.to_string(),
        unfit,
        formulas,
    }
}

/// Evaluate the closed forms the arguments ask for.
pub fn table(args: &FormulasArgs) -> Result<Table, Error> {
    let topology: Topology = args.topology.parse()?;
    let model = config::model_on(&args.model, &topology)?;
    let packets: Packets = args.packets.parse()?;
    // No algorithm pipelines more packets than elements: refused here, as `simulate`
    // does, rather than as "no closed form" on every pipelined row.
    algorithms::pipeline::resolve(&Params { packets, model }, args.len, 1)?;
    let kinds = ops(args.op.as_deref())?;
    check_ranks(&kinds, &topology, args)?;
    // A count above 1 where no algorithm asked for is pipelined would be printed beside
    // rows that ignore it (`compare` refuses it from every algorithm).
    if matches!(packets, Packets::Count(n) if n > 1)
        && !kinds
            .iter()
            .any(|&k| algorithms::for_op(k).any(|a| a.pipelined && a.fits(&topology).is_ok()))
    {
        let names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
        return Err(Error::InvalidParameter {
            what: "--packets",
            reason: format!(
                "no algorithm of {} that fits {topology} is pipelined; valid: 1 or `opt`",
                names.join(", ")
            ),
        });
    }
    let mut entries = Vec::new();
    // The first collective that cannot be posed, and whether any could: when none can
    // (`--len 18446744073709551615`), the command fails with that reason, not a table
    // of it on every row and exit 0.
    let (mut first_error, mut posed) = (None, false);
    for kind in kinds {
        let collective = match collective(kind, &topology, args) {
            Ok(c) => {
                posed = true;
                c
            }
            // Every collective asked for, and this one cannot be posed on the topology
            // (a transposition on a rank count that is no square): its algorithms do
            // not fit, and the reason is the collective's.
            Err(e) if args.op.is_none() => {
                if first_error.is_none() {
                    first_error = Some(e.clone());
                }
                entries.extend(algorithms::for_op(kind).map(|algo| Entry {
                    op: algo.op.name(),
                    algo: algo.name,
                    collective: kind.name().to_string(),
                    unfit: Some(e.to_string()),
                    formulas: Vec::new(),
                }));
                continue;
            }
            Err(e) => return Err(e),
        };
        let problem = Problem {
            topology: &topology,
            collective,
            len: args.len,
            commutative: true,
            counts: None,
        };
        for algo in algorithms::for_op(kind) {
            entries.push(entry(algo, &problem, packets, model));
        }
    }
    if let (false, Some(e)) = (posed, first_error) {
        return Err(e);
    }
    Ok(Table {
        topology: topology.to_string(),
        len: args.len,
        packets: packets.into(),
        model: (&model).into(),
        algorithms: entries,
    })
}

/// Run the command.
pub fn run(args: &FormulasArgs, io: &mut Io<'_>) -> Result<Outcome, CliError> {
    let t = table(args)?;
    let text = match args.format {
        Format::Text => text(&t),
        Format::Json => output::json(&t),
    };
    io.out.write_all(text.as_bytes())?;
    io.out.flush()?;
    Ok(Outcome::Ok)
}

/// The rows of one algorithm: one per closed form, or one saying why there is none.
fn rows(e: &Entry) -> Vec<Vec<String>> {
    let row = |value: String, kind: &str, expr: String, reference: &str| {
        let (c, a) = (e.collective.clone(), e.algo.to_string());
        vec![c, a, value, kind.into(), expr, reference.into()]
    };
    if let Some(why) = &e.unfit {
        return vec![row("-".into(), "-", format!("does not fit: {why}"), "-")];
    }
    if e.formulas.is_empty() {
        return vec![row(
            "-".into(),
            "-",
            "no closed form for this model".into(),
            "-",
        )];
    }
    e.formulas
        .iter()
        .map(|f| {
            let kind = output::formula_kind(f);
            row(output::num(f.value), kind, f.expr.clone(), f.reference)
        })
        .collect()
}

/// The closed forms as a table, one line per formula.
pub fn text(t: &Table) -> String {
    let head = format!(
        "{}, len {}, packets {}\n{}\n\n",
        t.topology,
        t.len,
        output::packets(Some(t.packets)),
        output::model_line(&t.model)
    );
    let rows: Vec<Vec<String>> = t.algorithms.iter().flat_map(rows).collect();
    let header = [
        "collective",
        "algo",
        "value",
        "kind",
        "formula",
        "reference",
    ];
    head + &output::table(&header, &rows)
}
