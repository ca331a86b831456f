//! Tower's generated roles on real API servers: they let every watch work (see `both`), and nothing more.
