"""Compare two timers fairly on a noisy machine: measure them alternately, pair by pair."""

import statistics


def median_ratio(first, second, rounds: int = 5) -> float:
    """Median over ``rounds`` of first() / second(), each pair measured back to back.

    Pairing cancels slow drifts in the machine's load (another process, a CPU clock change)
    that would skew two separate batches of measurements.
    """
    return statistics.median(first() / second() for _ in range(rounds))
