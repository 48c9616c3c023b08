"""SSH signatures on share archives (`ssh-keygen -Y`), as git signs commits with SSH keys.

`share save` signs with the key `ORCH_SHARE__SIGNING_KEY` names; `share load` accepts a
signature by a key in `ORCH_SHARE__ALLOWED_SIGNERS` (the allowed-signers format of
ssh-keygen(1) and git's `gpg.ssh.allowedSignersFile`), for the namespace below only, so
a signature made for anything else (a commit, a file) is not one for an archive.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

from orchestrator.core.errors import UserError
from orchestrator.core.events import Caution, Emit, Message

NAMESPACE = "gmxbench-share"
INSTALL = "install it (`apt-get install openssh-client`)"


def sig_path(archive: Path) -> Path:
    return archive.with_name(archive.name + ".sig")


def _ssh_keygen() -> str:
    found = shutil.which("ssh-keygen")
    if found is None:
        raise UserError(f"Signing and verifying archives needs ssh-keygen: {INSTALL}.")
    return found


def sign(data: Path, key: Path, dest: Path) -> None:
    """Write the signature of `data` by `key` to `dest`."""
    if not key.is_file():
        raise UserError(
            f"The signing key {key} (ORCH_SHARE__SIGNING_KEY) is not a file; make one with "
            "`ssh-keygen -t ed25519 -f ~/.ssh/gmxbench-share` or unset the setting."
        )
    with data.open("rb") as src:
        done = subprocess.run(
            [_ssh_keygen(), "-q", "-Y", "sign", "-n", NAMESPACE, "-f", str(key)],
            stdin=src, capture_output=True, check=False,
        )  # fmt: skip
    if done.returncode != 0 or not done.stdout:
        why = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no signature"]
        raise UserError(
            f"ssh-keygen could not sign with {key}: {why[0][:200]}. A key with a passphrase "
            "needs ssh-agent; check the key, or unset ORCH_SHARE__SIGNING_KEY."
        )
    dest.write_bytes(done.stdout)


def signer(archive: Path, allowed: Path | None) -> tuple[str, str]:
    """The principal whose allowed key signed `archive`, and the sha256 of the bytes that
    verified (unpacking checks it reads those same bytes); a `UserError` saying why none
    did. A signature that names an allowed key but does not verify is `Tampered`."""
    sig = sig_path(archive)
    if not sig.is_file():
        raise UserError(f"{archive} is not signed (no {sig.name} beside it)")
    if allowed is None:
        raise UserError(
            f"{archive} is signed, but no allowed-signers file is set "
            "(ORCH_SHARE__ALLOWED_SIGNERS) to say whose signatures to trust"
        )
    if not allowed.is_file():
        raise UserError(
            f"the allowed-signers file {allowed} (ORCH_SHARE__ALLOWED_SIGNERS) is missing"
        )
    tool = _ssh_keygen()
    found = subprocess.run(
        [tool, "-Y", "find-principals", "-s", str(sig), "-f", str(allowed)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    principals = found.stdout.split() if found.returncode == 0 else []
    if not principals:
        raise UserError(f"{archive} is signed by a key that {allowed} does not list")
    digest = hashlib.sha256()
    with archive.open("rb") as src, subprocess.Popen(
        [tool, "-Y", "verify", "-f", str(allowed), "-I", principals[0], "-n", NAMESPACE,
         "-s", str(sig)],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    ) as verify:  # fmt: skip
        assert verify.stdin is not None
        try:
            while chunk := src.read(1 << 20):
                digest.update(chunk)
                verify.stdin.write(chunk)
        except BrokenPipeError:
            pass  # ssh-keygen stopped reading: its exit status says why
        verify.stdin.close()
        returncode = verify.wait()
    if returncode != 0:
        raise Tampered(
            f"{archive} does not match its signature {sig.name} by {principals[0]}: it was "
            "altered after it was signed, or signed for something else. Nothing was loaded "
            "or tagged; get the archive again from its signer."
        )
    return principals[0], digest.hexdigest()


class Tampered(UserError):
    """A signature by a trusted key that does not verify: refused even with `--trust`."""


def require(path: Path, allowed: Path | None, trust: bool, emit: Emit) -> str | None:
    """Refuse an archive no allowed key signed, unless the user said `--trust`; the sha256
    of the signed bytes (None: loaded on trust)."""
    try:
        who, digest = signer(path, allowed)
    except Tampered:
        raise
    except UserError as exc:
        if not trust:
            raise UserError(
                f"{exc.message}. Nothing was loaded or tagged: an image runs code here, so "
                "only an archive signed by a key of your allowed-signers file loads (see "
                "'What share load trusts' in docs/images.md). Pass --trust to load it anyway "
                "if you know where it came from."
            ) from None
        emit(Caution(f"{exc.message}: loading it all the same, as --trust says"))
        return None
    emit(Message(f"{path.name} is signed by {who}"))
    return digest
