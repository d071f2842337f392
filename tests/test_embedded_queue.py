"""The embedded engine's sharing machinery without a model: the FIFO lock that serves a
daemon's clients in arrival order, and the background preparer of new questions."""

import threading
import time

from system1_gateway.providers.embedded.fifo import FifoLock
from system1_gateway.providers.embedded.prepare import Preparer


class Preempted(Exception):
    pass


def test_waiters_get_the_lock_in_arrival_order():
    lock = FifoLock()
    assert lock.acquire()
    order, threads = [], []
    for i in range(8):
        def take(i=i):
            assert lock.acquire(timeout=10)
            order.append(i)
            time.sleep(0.002)
            lock.release()
        t = threading.Thread(target=take)
        t.start()
        threads.append(t)
        while lock.waiting() < i + 1:  # the next one queues only after this one did
            time.sleep(0.001)
    lock.release()
    for t in threads:
        t.join(10)
    assert order == list(range(8))


def test_a_waiter_gives_up_at_its_timeout_and_leaves_the_queue():
    lock = FifoLock()
    assert lock.acquire()
    t0 = time.monotonic()
    assert lock.acquire(timeout=0.05) is False
    assert 0.04 <= time.monotonic() - t0 < 1
    assert lock.waiting() == 0
    lock.release()
    assert lock.acquire(timeout=0)


def test_background_work_waits_for_every_request_and_is_preempted_by_one():
    lock = FifoLock()
    calls = []
    assert lock.acquire(urgent=False)  # background holds the engine
    got = threading.Event()

    def request():
        assert lock.acquire(timeout=10, preempt=lambda: calls.append("preempt"))
        got.set()
        time.sleep(0.05)
        lock.release()

    t = threading.Thread(target=request)
    t.start()
    while not calls:
        time.sleep(0.001)
    assert calls == ["preempt"] and lock.waiting() == 1
    lock.release()
    assert got.wait(5)
    # while the request holds the lock, background work neither gets it nor pre-empts it
    assert lock.acquire(timeout=0.01, urgent=False) is False
    t.join(5)
    assert lock.acquire(timeout=1, urgent=False)
    lock.release()
    # a request finding a request in charge does not call preempt
    assert lock.acquire()
    threading.Thread(target=lambda: (lock.acquire(timeout=5, preempt=lambda: calls.append("again")), lock.release())).start()
    time.sleep(0.05)
    lock.release()
    time.sleep(0.05)
    assert calls == ["preempt"]


def test_a_preempted_job_is_retried_until_it_completes_and_keys_are_not_queued_twice():
    preparer = Preparer(Preempted)
    runs = []

    def job():
        runs.append("a")
        if len(runs) < 3:
            raise Preempted()

    preparer.submit("a", job)
    preparer.submit("a", job)
    assert preparer.wait(5)
    assert runs == ["a", "a", "a"] and preparer.pending() == 0


def test_a_failing_job_is_dropped_and_later_jobs_still_run():
    preparer = Preparer(Preempted)
    done = []
    preparer.submit("bad", lambda: 1 / 0)
    preparer.submit("good", lambda: done.append("good"))
    assert preparer.wait(5) and done == ["good"]
    preparer.close()
    preparer.submit("late", lambda: done.append("late"))
    assert preparer.wait(1) and done == ["good"]  # closed: nothing new runs
