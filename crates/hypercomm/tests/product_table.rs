//! docs/product.md holds the table `cargo run --release -p hypercomm --example
//! product_table` prints (Algorithm A2 against ⌈AS(G)⌉, seed 002), as it is now: every
//! row is verified and simulated again here.

#[path = "../examples/product_table.rs"]
mod product_table;

#[test]
fn docs_product_md_holds_the_current_table() {
    let table = product_table::table();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/product.md");
    let doc = std::fs::read_to_string(path).expect("docs/product.md");
    assert!(
        doc.contains(&table),
        "docs/product.md does not hold the current table; regenerate it with \
         `cargo run --release -p hypercomm --example product_table`:\n{table}"
    );
}
