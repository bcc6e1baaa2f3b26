//! [`ExecError`]: why a page could not be computed — invalid options, a thread pool that
//! could not be built, or the source's own error, kept typed.

use std::convert::Infallible;

/// Why execution failed. `E` is the source's error type ([`EntitySource::Error`](crate::EntitySource::Error); the
/// default [`Infallible`] is that of sources that cannot fail, such as
/// [`VecSource`](crate::VecSource)): a source error comes back as itself, typed,
/// so a storage layer matches on it without downcasting.
///
/// ```
/// use std::convert::Infallible;
/// use tableq_exec::ExecError;
/// #[derive(Debug, thiserror::Error)]
/// #[error("disk full")]
/// struct DiskFull;
/// let e: ExecError<DiskFull> = ExecError::Source(DiskFull);
/// assert_eq!(e.to_string(), "disk full");
/// let f: ExecError = ExecError::InvalidOption("page size 0".into());
/// let _: ExecError<Infallible> = f;
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExecError<E = Infallible> {
    /// Invalid [`PageOptions`](crate::PageOptions) or thread count.
    #[error("invalid execution option: {0}")]
    InvalidOption(String),
    /// The thread pool could not be created.
    #[error("cannot create the executor's thread pool: {0}")]
    ThreadPool(#[from] rayon::ThreadPoolBuildError),
    /// The source failed to read (scan, get or split): its own error, unchanged (`Display`
    /// and `source()` are the source error's).
    #[error(transparent)]
    Source(E),
}

impl<E> ExecError<E> {
    /// Converts the source error (e.g. into a service's own error type, or a boxed one);
    /// the other variants are kept.
    ///
    /// ```
    /// use tableq_exec::ExecError;
    /// let e: ExecError<std::io::Error> = ExecError::Source(std::io::Error::other("disk"));
    /// let boxed: ExecError<Box<dyn std::error::Error + Send + Sync>> = e.map_source(Box::from);
    /// assert_eq!(boxed.to_string(), "disk");
    /// ```
    pub fn map_source<F>(self, f: impl FnOnce(E) -> F) -> ExecError<F> {
        match self {
            ExecError::InvalidOption(m) => ExecError::InvalidOption(m),
            ExecError::ThreadPool(e) => ExecError::ThreadPool(e),
            ExecError::Source(e) => ExecError::Source(f(e)),
        }
    }
}
