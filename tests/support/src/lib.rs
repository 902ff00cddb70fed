//! Test helpers shared by the host tests.
