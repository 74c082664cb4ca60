//! `make capsule-compare`: Capsule itself as the judge of the bundle's Capsule scenarios
//! (README "Coming from Capsule").

pub mod compare;
pub mod differences;
pub mod generated;
pub mod plane;
pub mod table;
