//! The `hypercomm` binary: see [`hypercomm_cli`].

use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut out = std::io::stdout().lock();
    // Not locked for the whole run: `bench` draws its progress bar on stderr from a rank
    // thread while this thread waits for the ranks (a held lock would deadlock them).
    let mut err = std::io::stderr();
    let code = hypercomm_cli::run(std::env::args_os(), &mut out, &mut err);
    let _ = out.flush();
    ExitCode::from(code)
}
