//! A `git fast-import` stream: the whole history of a repository written as one input, so building a
//! repository costs one process instead of one per file and commit.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Who made a commit and when (seconds since the Unix epoch, UTC).
#[derive(Debug, Clone)]
pub struct Signature {
    /// Display name.
    pub name: String,
    /// E-mail address; the forge maps it back to a login.
    pub email: String,
    /// Seconds since the Unix epoch.
    pub time: i64,
}

/// A commit to write: its branch, parents (by mark), message and the files it changes.
#[derive(Debug, Clone)]
pub struct CommitSpec {
    /// The ref the commit lands on, e.g. `refs/heads/main`.
    pub branch: String,
    /// Author.
    pub author: Signature,
    /// Committer.
    pub committer: Signature,
    /// The full message.
    pub message: String,
    /// First parent, by mark; `None` for a root commit.
    pub from: Option<usize>,
    /// Second parent of a merge commit, by mark.
    pub merge: Option<usize>,
    /// Files written (path → content) relative to the first parent's tree.
    pub files: BTreeMap<String, Vec<u8>>,
}

/// The stream being written; each commit gets a mark that later commits and the caller refer to.
#[derive(Debug, Default)]
pub struct Stream {
    buffer: Vec<u8>,
    next_mark: usize,
}

impl Stream {
    /// Appends a commit and returns its mark.
    pub fn commit(&mut self, spec: &CommitSpec) -> usize {
        self.next_mark += 1;
        let mark = self.next_mark;
        let mut header = String::new();
        // Writing into a String cannot fail; the results are ignored on purpose.
        let _ = writeln!(header, "commit {}", spec.branch);
        let _ = writeln!(header, "mark :{mark}");
        let _ = writeln!(
            header,
            "author {} <{}> {} +0000",
            spec.author.name, spec.author.email, spec.author.time
        );
        let _ = writeln!(
            header,
            "committer {} <{}> {} +0000",
            spec.committer.name, spec.committer.email, spec.committer.time
        );
        let message = if spec.message.ends_with('\n') {
            spec.message.clone()
        } else {
            format!("{}\n", spec.message)
        };
        let _ = writeln!(header, "data {}", message.len());
        header.push_str(&message);
        if let Some(from) = spec.from {
            let _ = writeln!(header, "from :{from}");
        }
        if let Some(merge) = spec.merge {
            let _ = writeln!(header, "merge :{merge}");
        }
        self.buffer.extend_from_slice(header.as_bytes());
        for (path, content) in &spec.files {
            self.buffer.extend_from_slice(
                format!("M 100644 inline {path}\ndata {}\n", content.len()).as_bytes(),
            );
            self.buffer.extend_from_slice(content);
            self.buffer.push(b'\n');
        }
        self.buffer.push(b'\n');
        mark
    }

    /// Points `branch` at the commit `mark`.
    pub fn reset(&mut self, branch: &str, mark: usize) {
        self.buffer
            .extend_from_slice(format!("reset {branch}\nfrom :{mark}\n\n").as_bytes());
    }

    /// The stream's bytes, ending with `done` so fast-import knows it is complete.
    pub fn finish(mut self) -> Vec<u8> {
        self.buffer.extend_from_slice(b"done\n");
        self.buffer
    }
}

/// Reads a `--export-marks` file: `:<mark> <sha>` per line.
pub fn parse_marks(text: &str) -> BTreeMap<usize, String> {
    text.lines()
        .filter_map(|line| {
            let (mark, sha) = line.strip_prefix(':')?.split_once(' ')?;
            Some((mark.parse().ok()?, sha.trim().to_string()))
        })
        .collect()
}
