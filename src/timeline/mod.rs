//! The timeline's engine, independent of any drawing: [`layout`] puts every event in a row,
//! [`lod`] says what a row shows over a time range at a given scale, [`inspect`] answers what a
//! slice is and finds slices by name, [`bands`] places the diagnosis (findings, unexplained
//! regions, window scores) in time, and [`steps`] labels the steps (a serving capture's by
//! kind). The web app's worker draws from these.

pub mod bands;
pub mod inspect;
pub mod layout;
pub mod lod;
pub mod steps;

pub use layout::Layout;
