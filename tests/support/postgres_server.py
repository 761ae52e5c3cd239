"""A real Postgres for the tests: the server binaries started on a loopback port in a temporary folder.

`make test` installs Debian's postgresql packages when initdb/postgres are missing; elsewhere the tests
that need Postgres are skipped, saying so. The binaries are looked up on PATH, then in Debian's
/usr/lib/postgresql/*/bin (which is not on PATH)."""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from ports import free_port

__all__ = ["PostgresServer", "find_binaries"]


def find_binaries() -> tuple[str, str] | None:
    """(initdb, postgres), from PATH or Debian's versioned folder; None where they are not installed."""
    initdb, postgres = shutil.which("initdb"), shutil.which("postgres")
    if initdb and postgres:
        return initdb, postgres
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if os.access(f"{folder}/initdb", os.X_OK) and os.access(f"{folder}/postgres", os.X_OK):
            return f"{folder}/initdb", f"{folder}/postgres"
    return None


@dataclass
class PostgresServer:
    """One Postgres cluster; `database()` makes a fresh, empty database on it for one test."""

    folder: Path
    port: int
    process: subprocess.Popen
    command: tuple[str, ...] = ()

    @classmethod
    def start(cls, *, max_connections: int = 300) -> PostgresServer:
        found = find_binaries()
        if found is None:
            raise FileNotFoundError("the Postgres server binaries (initdb, postgres) are not installed")
        initdb, postgres = found
        folder = Path(tempfile.mkdtemp(prefix="oz0-pg-"))  # not under pytest's 0700 tmp: Postgres runs as its own user
        as_user: list[str] = []
        if os.geteuid() == 0:  # Postgres refuses to run as root
            if shutil.which("runuser") is None:
                raise PermissionError("running as root without runuser to start Postgres as another user")
            shutil.chown(folder, "postgres")
            as_user = ["runuser", "-u", "postgres", "--"]
        data = folder / "data"
        made = subprocess.run([*as_user, initdb, "-D", str(data), "-U", "oz0", "--auth=trust", "-E", "UTF8"],
                              capture_output=True, text=True, timeout=120)
        if made.returncode != 0:
            raise RuntimeError(f"initdb failed: {made.stderr[-2000:]}")
        port = free_port()
        command = (*as_user, postgres, "-D", str(data), "-p", str(port), "-h", "127.0.0.1", "-k", str(folder),
                   "-c", f"max_connections={max_connections}", "-c", "fsync=off")
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        server = cls(folder, port, process, command)
        server._wait_ready()
        return server

    def halt(self) -> None:
        """Stop the server as an outage does (a fast shutdown: every session cut), keeping its data."""
        pid_file = self.folder / "data" / "postmaster.pid"
        if pid_file.exists() and self.process.poll() is None:
            os.kill(int(pid_file.read_text().split()[0]), signal.SIGINT)
        self.process.wait(timeout=30)

    def resume(self) -> None:
        """Start the halted server again, on the same port and data."""
        self.process = subprocess.Popen(self.command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self._wait_ready()

    def restart(self) -> None:
        self.halt()
        self.resume()

    def _wait_ready(self) -> None:
        import psycopg

        deadline = time.monotonic() + 30
        while True:
            try:
                psycopg.connect(self.dsn("postgres")).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.stop()
                    raise RuntimeError("Postgres did not start within 30 s") from None
                time.sleep(0.2)

    def dsn(self, database: str) -> str:
        return f"host=127.0.0.1 port={self.port} user=oz0 dbname={database}"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://oz0@127.0.0.1:{self.port}/{database}"

    def database(self) -> str:
        """A new empty database; its URL (as OZ0_DATABASE_URL takes it)."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.dsn("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        pid_file = self.folder / "data" / "postmaster.pid"
        if pid_file.exists() and self.process.poll() is None:
            os.kill(int(pid_file.read_text().split()[0]), signal.SIGINT)  # fast shutdown (runuser does not pass signals on)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
        elif self.process.poll() is None:
            self.process.kill()
        shutil.rmtree(self.folder, ignore_errors=True)
