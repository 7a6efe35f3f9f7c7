//! The service's node with a bug planted in catch-up, for the fleet scenario that must catch
//! it (`load-scripts/fleet/catchup.py`, `plant=NAME`): the binary's flags, and `--plant NAME`
//! (`cursor-not-saved`, `lease-ignored`, `stored-check-skipped`) anywhere among them.
//!
//! ```text
//! cargo run -p webhook-ingest --example planted_catchup -- --plant lease-ignored --port 0
//! ```
//!
//! It is the node `webhook-ingest` runs (`webhook_ingest::node::run`), its catch-up's store
//! wrapped by the tests' own plant (`tests/common/plants.rs`, included by its path): the
//! service's code has no planted bug to turn on.

#[path = "../tests/common/plants.rs"]
mod plants;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::ValueEnum;
use plants::Plant;
use webhook_ingest::cli::Cli;

/// The flag that names the plant, taken out before the service's flags are read.
const PLANT_FLAG: &str = "--plant";

fn main() -> ExitCode {
    let (plant, args) = match plant_and_flags(std::env::args_os().collect()) {
        Ok(split) => split,
        Err(message) => {
            eprintln!("planted_catchup: {message}");
            return ExitCode::from(2);
        }
    };
    let cli = Cli::try_parse_args(args).unwrap_or_else(|error| error.exit());
    webhook_ingest::node::run(cli, |config| {
        config.catchup.wrap_store = Some(plant.wrap_store());
    })
}

/// The plant `--plant NAME` names, and the command line without it.
fn plant_and_flags(mut args: Vec<OsString>) -> Result<(Plant, Vec<OsString>), String> {
    let names = Plant::value_variants()
        .iter()
        .filter_map(|plant| plant.to_possible_value())
        .map(|value| value.get_name().to_owned())
        .collect::<Vec<_>>()
        .join(", ");
    let at = args
        .iter()
        .position(|arg| arg == PLANT_FLAG)
        .ok_or_else(|| format!("{PLANT_FLAG} NAME is required ({names})"))?;
    let name = args
        .get(at + 1)
        .and_then(|name| name.to_str())
        .ok_or_else(|| format!("{PLANT_FLAG} needs a name ({names})"))?;
    let plant = Plant::from_str(name, false).map_err(|_| format!("no plant `{name}` ({names})"))?;
    args.drain(at..at + 2);
    Ok((plant, args))
}
