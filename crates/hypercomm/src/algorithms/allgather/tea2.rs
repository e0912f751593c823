//! In progress (issue 3).
