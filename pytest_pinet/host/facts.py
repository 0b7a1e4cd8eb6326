"""Facts about a host, gathered once per host per session in a single SSH round trip.

A figure means little without its context: the same board measures differently on another
kernel, with another adapter firmware, at another clock or while throttling.  These facts go
into every measurement's context, the results files and the reports.
"""

from __future__ import annotations

from ..errors import LabFault
from ..model.host_facts import HostFacts
from .platform import FACTS_MARK, LINUX, Platform
from .remote import RemoteHost
from .shell import split_sections

MARK = FACTS_MARK


def facts_script(interfaces: list[str], platform: Platform = LINUX) -> str:
    """One shell script printing every fact behind a section marker (tolerant of absence)."""
    return platform.facts_script(interfaces)


def facts_from_output(host: str, text: str, interfaces: list[str], platform: Platform = LINUX) -> HostFacts:
    """Build :class:`HostFacts` from the script's output (``platform`` reads its sections)."""
    s = {name: body.strip() for name, body in split_sections(text, MARK).items()}
    if "kernel" not in s:
        raise LabFault("facts", f"{host}: facts script printed nothing recognisable")
    return platform.facts_from_sections(host, s, interfaces)


def gather_facts(host: RemoteHost, interfaces: list[str]) -> HostFacts:
    """Gather facts of ``host`` and the given interfaces in one SSH command."""
    out = host.run_shell(facts_script(interfaces, host.platform), timeout=30)
    return facts_from_output(host.name, out.stdout, interfaces, host.platform)
