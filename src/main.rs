//! The story of a run: read the command line, set up logging, resolve the settings
//! (command line over config file over defaults), and hand over to the command.

use std::process::ExitCode;

use quarry::cli::Command;
use quarry::commands;
use quarry::config::Settings;

fn main() -> ExitCode {
    quarry::memory::limit_malloc_arenas();
    // A worker: this same binary, answering one reader's requests in a child
    // process (libhdf5, the PDF reader), so that a crash, a hang or a blown
    // memory limit on a hostile file costs only the child.
    if let Some(arg) = std::env::args_os().nth(1)
        && let Some(code) = quarry::formats::run_worker(&arg)
    {
        return code;
    }
    // Not in a worker: its address space is limited, and it evaluates nothing.
    quarry::daemon::size_thread_stacks();
    if let Ok(exe) = std::env::current_exe() {
        quarry::formats::worker::set_helper(exe);
    }
    let cli = quarry::cli::parse();
    quarry::logging::init(cli.verbose);
    // A reader's panic on a hostile file is that file's error, logged in one
    // line by whoever caught it; any other panic keeps the default report.
    quarry::panics::install_hook();
    // Everything quarry creates (catalog, text index, socket, exports) is the
    // user's alone, whatever the folder it lands in allows.
    // SAFETY: umask(2) has no memory-safety preconditions.
    unsafe { libc::umask(0o077) };
    let outcome = match cli.command {
        Command::Serve(args) => Settings::load(&args).and_then(commands::serve::run),
        Command::Mcp(args) => commands::mcp::main(&args),
        Command::Rebuild(args) => Settings::load(&args.into()).and_then(commands::rebuild::run),
        Command::Status(args) => commands::status::run(args),
        Command::Tools(args) => commands::tools::run(args),
        Command::Call(args) => commands::call::run(args),
        Command::Completions(args) => commands::completions(args),
        // One task of a cluster job: reads its files, writes its share.
        Command::Worker(args) => quarry::executor::worker::run(&args.job, args.task),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("quarry: {e:#}");
            // A mistake in the command line, as clap reports its own.
            if e.is::<commands::call::UsageError>() {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}
