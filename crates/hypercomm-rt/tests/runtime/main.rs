//! The runtime's one integration-test binary: the harness that runs every registry
//! algorithm on the threads backend against a serial reference, and the tests of
//! failures, point-to-point messages, in-place calls and errors.

mod api;
mod failures;
mod harness;
mod reference;
