//! The `compare --html` report in a real browser: headless Chromium (Debian's
//! `chromium`) loads the page, writes a screenshot and dumps the DOM in one run. The
//! page has no script, so any console message at all (an error, a resource that did
//! not load) fails the test; the screenshot must not be blank; the DOM must hold one
//! table row per algorithm `compare` reports.
//!
//! Without `/usr/bin/chromium` (or `$HYPERCOMM_CHROMIUM`) the test says it was skipped,
//! unless `HYPERCOMM_REQUIRE_BROWSER=1` (scripts/test.sh sets it), which makes a missing
//! browser a failure.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The browser, if installed.
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("HYPERCOMM_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    path.exists().then_some(path)
}

/// What one headless load of a page gave.
struct Load {
    /// The serialized DOM after load.
    dom: String,
    /// The console lines Chromium logged.
    console: Vec<String>,
}

/// Load `page` headless, screenshot to `png`.
fn load(browser: &Path, page: &Path, png: &Path, profile: &Path) -> Load {
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1000,1200",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium starts");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let console = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect();
    Load {
        dom: String::from_utf8(out.stdout).unwrap(),
        console,
    }
}

/// The standard deviation of the screenshot's grey levels (0 to 255).
fn grey_deviation(png: &Path) -> f64 {
    let decoder = png::Decoder::new(std::fs::File::open(png).expect("a screenshot"));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    let greys: Vec<f64> = buf[..info.buffer_size()]
        .chunks(channels)
        .map(|p| match channels {
            1 | 2 => p[0] as f64,
            _ => (p[0] as f64 + p[1] as f64 + p[2] as f64) / 3.0,
        })
        .collect();
    let n = greys.len() as f64;
    let mean = greys.iter().sum::<f64>() / n;
    (greys.iter().map(|g| (g - mean) * (g - mean)).sum::<f64>() / n).sqrt()
}

#[test]
fn compare_html_renders_in_chromium() {
    let Some(browser) = chromium() else {
        let why = "no /usr/bin/chromium (apt-get install chromium, or set HYPERCOMM_CHROMIUM)";
        if std::env::var("HYPERCOMM_REQUIRE_BROWSER").as_deref() == Ok("1") {
            panic!("HYPERCOMM_REQUIRE_BROWSER=1 but the browser test cannot run: {why}");
        }
        eprintln!("browser test skipped: {why}");
        return;
    };
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("browser");
    std::fs::create_dir_all(&dir).unwrap();
    let page = dir.join("compare.html");
    let args = [
        "compare",
        "--topology",
        "hypercube:3",
        "--op",
        "allgather",
        "--len",
        "100",
    ];
    let run = |extra: &[&str]| {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let all = ["hypercomm"].iter().chain(&args).chain(extra);
        let code = hypercomm_cli::run(all.copied(), &mut out, &mut err);
        assert_eq!(code, 0, "{}", String::from_utf8_lossy(&err));
        String::from_utf8(out).unwrap()
    };
    run(&["--html", page.to_str().unwrap()]);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&run(&["--format", "json"])).unwrap();

    let png = dir.join("compare.png");
    let _ = std::fs::remove_file(&png);
    let got = load(&browser, &page, &png, &dir.join("profile"));
    assert!(
        got.console.is_empty(),
        "console messages: {:#?}",
        got.console
    );
    let deviation = grey_deviation(&png);
    assert!(
        deviation > 10.0,
        "the screenshot is blank (σ = {deviation:.2})"
    );
    let doc_rows = got.dom.matches("<tr class=\"row\">").count();
    assert_eq!(doc_rows, rows.len(), "table rows in the DOM");
    for r in &rows {
        let name = r["algo"].as_str().unwrap();
        assert!(got.dom.contains(&format!("<td>{name}</td>")), "row {name}");
    }
    assert!(
        got.dom.contains("hypercomm-drawing"),
        "the drawing is in the DOM"
    );

    // The console check catches what it should: a page that errs is reported.
    let bad = dir.join("bad.html");
    std::fs::write(
        &bad,
        "<!DOCTYPE html><html><body><p>x</p><script>undefinedFunction();</script></body></html>",
    )
    .unwrap();
    let caught = load(&browser, &bad, &dir.join("bad.png"), &dir.join("profile"));
    assert!(
        caught
            .console
            .iter()
            .any(|l| l.contains("undefinedFunction")),
        "the console check missed an error: {:#?}",
        caught.console
    );
}
