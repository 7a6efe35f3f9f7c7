//! The service's binary as an operator runs it: started, its `listening on ADDR` first line
//! read, then stopped the way an orchestrator stops it.

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::thread::JoinHandle;

/// The variable that names the binary's spool directory.
const SPOOL_ENV: &str = "WEBHOOK_INGEST_SPOOL";

/// The service's binary, with no listen address inherited from the environment, and a spool
/// of its own in the temporary directory (removed with its [`Running`]; a `--spool` flag
/// still wins). Without it every binary a test starts would share `webhook-ingest-spool/` in
/// the package's directory, with the inboxes' secrets in its `known-inboxes.json`.
pub fn binary() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_webhook-ingest"));
    command
        .env_remove("WEBHOOK_INGEST_LISTEN")
        .env(SPOOL_ENV, super::temp_path("binary-spool", "d"));
    command
}

/// A running binary whose first line has been read; killed with SIGKILL when dropped
/// before [`Running::terminate`], so that a failed test leaves no process behind.
pub struct Running {
    child: Child,
    stdout: BufReader<ChildStdout>,
    /// Read as it comes, so that a chatty log cannot fill the pipe and stall the service.
    stderr: Option<JoinHandle<String>>,
    /// The first line the binary printed, as printed.
    pub first_line: String,
    /// The spool directory [`binary`] gave it, removed on drop.
    spool: Option<PathBuf>,
}

/// What a stopped binary printed after its first line, and its log.
pub struct Stopped {
    pub stdout: String,
    pub stderr: String,
}

impl Running {
    /// Starts `command`, capturing its output, and waits for its first line.
    pub fn start(mut command: Command) -> Self {
        let spool = command
            .get_envs()
            .find(|(name, _)| *name == SPOOL_ENV)
            .and_then(|(_, dir)| dir.map(PathBuf::from));
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut stderr = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut log = String::new();
            stderr.read_to_string(&mut log).unwrap();
            log
        });
        let mut first_line = String::new();
        stdout.read_line(&mut first_line).unwrap();
        Self {
            child,
            stdout,
            stderr: Some(stderr),
            first_line,
            spool,
        }
    }

    /// The `ADDR` of a first line `listening on ADDR`; panics, showing the line, on another.
    pub fn addr(&self) -> String {
        self.first_line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("no address in the first line: {}", self.first_line))
            .to_owned()
    }

    /// SIGTERM, as an orchestrator stops it: a graceful shutdown that flushes the log. Waits
    /// for the exit and returns the rest of the output.
    pub fn terminate(mut self) -> Stopped {
        let sent = Command::new("kill")
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        assert!(sent.success(), "kill {}", self.child.id());
        self.child.wait().unwrap();
        let mut stdout = String::new();
        self.stdout.read_to_string(&mut stdout).unwrap();
        Stopped {
            stdout,
            stderr: self.stderr.take().unwrap().join().unwrap(),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // After terminate the process is gone and both calls change nothing.
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(spool) = &self.spool {
            let _ = std::fs::remove_dir_all(spool);
        }
    }
}
