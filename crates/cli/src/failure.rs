//! How a command ended, and the one mapping from the libraries' typed errors to it: every
//! `From` here decides by the error's class (`heaplab_model::ErrorClass`: bad input or failed
//! work), and `main` turns a [`Failure`] into the exit code (2 and 1).

use heaplab_model::{ErrorClass, InputError};

/// How a command ended, mapped to the exit code.
pub enum Failure {
    /// Bad usage or input (exit 2).
    Input(String),
    /// The work failed or a check found an invalid result (exit 1).
    Work(String),
}

impl Failure {
    /// The failure of `class`, with `message`.
    pub fn of(class: ErrorClass, message: String) -> Failure {
        match class {
            ErrorClass::BadInput => Failure::Input(message),
            ErrorClass::WorkFailed => Failure::Work(message),
        }
    }
}

impl From<InputError> for Failure {
    fn from(e: InputError) -> Self {
        Failure::Input(e.to_string())
    }
}

impl From<heaplab_replay::ReplayError> for Failure {
    fn from(e: heaplab_replay::ReplayError) -> Self {
        Failure::of(e.class(), e.to_string())
    }
}

impl From<heaplab_replay::AllocatorError> for Failure {
    fn from(e: heaplab_replay::AllocatorError) -> Self {
        Failure::Input(e.0)
    }
}

impl From<heaplab_trace::launch::LaunchError> for Failure {
    fn from(e: heaplab_trace::launch::LaunchError) -> Self {
        Failure::of(e.class(), e.to_string())
    }
}

impl From<heaplab_access::run::RunError> for Failure {
    fn from(e: heaplab_access::run::RunError) -> Self {
        Failure::of(e.class(), e.to_string())
    }
}

impl From<heaplab_group::GroupError> for Failure {
    fn from(e: heaplab_group::GroupError) -> Self {
        Failure::of(e.class(), e.to_string())
    }
}

impl From<heaplab_model::files::WriteError> for Failure {
    fn from(e: heaplab_model::files::WriteError) -> Self {
        Failure::of(e.class(), e.to_string())
    }
}
