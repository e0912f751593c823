//! The `hypercomm` binary: see [`hypercomm_cli`].

use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut out = std::io::stdout().lock();
    let mut err = std::io::stderr().lock();
    let code = hypercomm_cli::run(std::env::args_os(), &mut out, &mut err);
    let _ = out.flush();
    ExitCode::from(code)
}
