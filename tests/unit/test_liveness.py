from __future__ import annotations

from prsd.leader.liveness import Observer


def test_new_observer_waits_a_full_lease_from_its_own_start() -> None:
    obs = Observer(lease_s=10, started=100.0)
    assert not obs.expired("never-seen", 109.9)
    assert obs.expired("never-seen", 110.0)


def test_a_changing_key_keeps_a_peer_alive() -> None:
    obs = Observer(lease_s=10, started=0.0)
    for t in range(0, 100, 5):
        obs.observe("n1", ("boot", t), float(t))
        assert not obs.expired("n1", float(t) + 9.9)


def test_an_unchanged_key_expires_after_the_lease() -> None:
    obs = Observer(lease_s=10, started=0.0)
    assert obs.observe("n1", ("boot", 1), 5.0)
    assert not obs.observe("n1", ("boot", 1), 12.0)
    assert obs.silent_for("n1", 14.0) == 9.0
    assert obs.expired("n1", 15.0)


def test_a_restart_with_a_new_boot_id_is_a_change() -> None:
    obs = Observer(lease_s=10, started=0.0)
    obs.observe("n1", ("boot-a", 7), 0.0)
    assert obs.observe("n1", ("boot-b", 1), 20.0)
    assert not obs.expired("n1", 25.0)
