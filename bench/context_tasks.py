"""The task set of bench/context.py: multi-step data tasks, each scripted two ways.

Every task finds a dataset, looks at it, filters and aggregates it with SQL (one or
two queries, the first saved for the second) and charts the result. Scripted the
ordinary way, the model makes one tool call per step and reads every result; scripted
as a program, it makes one ``run_program`` call whose code makes the same calls and
returns only the answer. The reference answer is the first row of the last query,
computed by bench/context.py with DuckDB over the same data: both ways must show it to the model.

The data is generated from a fixed seed, so every run sees the same rows.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

REGIONS = ("north", "south", "east", "west")
PRODUCTS = ("anchor", "beacon", "cable", "dynamo", "ember")
CITIES = ("oslo", "bergen", "tromso", "stavanger", "trondheim")
TEAMS = ("billing", "platform", "mobile", "search")
PRIORITIES = ("low", "normal", "high", "urgent")
STATUSES = ("open", "closed", "waiting")

# The tools both ways are offered (the program calls the same ones from its code).
OFFERED = ("search_catalog", "preview_data", "query", "create_chart", "run_program")


def datasets() -> dict[str, bytes]:
    """The CSV files uploaded into every task's conversation, by dataset name."""
    rng = random.Random(41)
    sales = ["region,product,month,units,revenue"]
    for month in range(1, 13):
        for region in REGIONS:
            for product in PRODUCTS:
                units = rng.randint(5, 120)
                sales.append(f"{region},{product},{month},{units},{units * rng.randint(8, 30)}")
    weather = ["city,month,temp_c,rain_mm"]
    for city in CITIES:
        for month in range(1, 13):
            for _day in range(4):
                weather.append(f"{city},{month},{rng.randint(-12, 24)},{rng.randint(0, 40)}")
    tickets = ["team,priority,status,hours"]
    for _ in range(240):
        tickets.append(f"{rng.choice(TEAMS)},{rng.choice(PRIORITIES)},{rng.choice(STATUSES)},{rng.randint(1, 60)}")
    return {
        name: ("\n".join(lines) + "\n").encode()
        for name, lines in (("sales", sales), ("weather", weather), ("tickets", tickets))
    }


@dataclass(frozen=True)
class Task:
    """One multi-step task: find ``dataset`` with ``find``, run ``queries`` in order
    (each saved as ``saved[i]``), chart the last with ``chart`` = (x, y)."""

    name: str
    prompt: str
    find: str
    dataset: str
    queries: tuple[str, ...]
    chart: tuple[str, str]

    def saved(self, index: int) -> str:
        return f"{self.name}_{index + 1}"

    def ordinary(self, answer: str, top: tuple[str, str]) -> list[dict]:
        """The script of the ordinary way: one model call per step, then the answer.
        ``top`` is the reference row (x, y): the last query's result shows it as a table row."""
        steps: list[tuple[str, dict]] = [
            ("search_catalog", {"query": self.find, "kinds": ["dataset"]}),
            ("preview_data", {"dataset": self.dataset, "rows": 10}),
        ]
        steps += [("query", {"sql": sql, "save_as": self.saved(i)}) for i, sql in enumerate(self.queries)]
        x, y = self.chart
        steps.append(("create_chart", {"dataset": self.saved(len(self.queries) - 1), "x": x, "y": y}))
        turns: list[dict] = [
            {"tool_uses": [{"name": name, "input": inputs, "id": f"toolu_{self.name}_{n}"}]}
            for n, (name, inputs) in enumerate(steps)
        ]
        # The turn after the last query reads its result: the answer must be in it.
        turns[len(steps) - 1]["expect"] = {"tool_result_contains": f"{top[0]} | {top[1]}"}
        turns.append({"text": [answer]})
        return turns

    def program(self, answer: str, top: tuple[str, str]) -> list[dict]:
        """The script of the program way: one run_program call, then the answer.
        ``top`` is the reference row (x, y): the program returns it as ``x: y``."""
        return [
            {"tool_uses": [{"name": "run_program", "input": {"code": self.code()}, "id": f"toolu_{self.name}_p"}]},
            {"text": [answer], "expect": {"tool_result_contains": f"{top[0]}: {top[1]}"}},
        ]

    def code(self) -> str:
        """The program: the same calls as the ordinary way; only the answer comes back."""
        x, y = self.chart
        lines = [
            f"call('search_catalog', query={self.find!r}, kinds=['dataset'])",
            f"call('preview_data', dataset={self.dataset!r}, rows=10)",
        ]
        for i, sql in enumerate(self.queries):
            lines.append(f"rows = call('query', sql={sql!r}, save_as={self.saved(i)!r})")
        lines.append(f"call('create_chart', dataset={self.saved(len(self.queries) - 1)!r}, x={x!r}, y={y!r})")
        lines.append("top = rows[0]")
        lines.append(f"result = str(top[{x!r}]) + ': ' + str(top[{y!r}])")
        return "\n".join(lines)


def _t(name: str, prompt: str, find: str, dataset: str, chart: tuple[str, str], *queries: str) -> Task:
    return Task(name, prompt, find, dataset, tuple(queries), chart)


TASKS: tuple[Task, ...] = (
    _t(
        "units_by_region",
        "Which region sold the most units? Chart units by region.",
        "product sales by region",
        "sales",
        ("region", "units"),
        "SELECT region, CAST(sum(units) AS BIGINT) AS units FROM sales GROUP BY region ORDER BY units DESC",
    ),
    _t(
        "revenue_by_product",
        "Which product earned the most? Chart revenue by product.",
        "sales revenue",
        "sales",
        ("product", "revenue"),
        "SELECT product, CAST(sum(revenue) AS BIGINT) AS revenue FROM sales GROUP BY product ORDER BY revenue DESC",
    ),
    _t(
        "best_month_north",
        "In the north, which month had the most revenue? Chart it by month.",
        "sales revenue per month",
        "sales",
        ("month", "revenue"),
        "SELECT * FROM sales WHERE region = 'north'",
        "SELECT month, CAST(sum(revenue) AS BIGINT) AS revenue FROM best_month_north_1 GROUP BY month "
        "ORDER BY revenue DESC",
    ),
    _t(
        "beacon_regions",
        "Where does beacon sell best? Chart beacon's units by region.",
        "product units sold",
        "sales",
        ("region", "units"),
        "SELECT * FROM sales WHERE product = 'beacon'",
        "SELECT region, CAST(sum(units) AS BIGINT) AS units FROM beacon_regions_1 GROUP BY region ORDER BY units DESC",
    ),
    _t(
        "h2_revenue",
        "Which region earned most in the second half-year? Chart it.",
        "sales by month",
        "sales",
        ("region", "revenue"),
        "SELECT * FROM sales WHERE month > 6",
        "SELECT region, CAST(sum(revenue) AS BIGINT) AS revenue FROM h2_revenue_1 GROUP BY region "
        "ORDER BY revenue DESC",
    ),
    _t(
        "big_orders",
        "Which product has the most rows over 100 units? Chart the counts.",
        "units sold per product",
        "sales",
        ("product", "n"),
        "SELECT product, CAST(count(*) AS BIGINT) AS n FROM sales WHERE units > 100 GROUP BY product "
        "ORDER BY n DESC, product",
    ),
    _t(
        "avg_price",
        "Which product has the highest revenue per unit? Chart it.",
        "revenue and units",
        "sales",
        ("product", "per_unit"),
        "SELECT product, round(sum(revenue) / sum(units), 2) AS per_unit FROM sales GROUP BY product "
        "ORDER BY per_unit DESC",
    ),
    _t(
        "q1_units",
        "Which region sold most units in the first quarter? Chart it.",
        "sales units",
        "sales",
        ("region", "units"),
        "SELECT * FROM sales WHERE month <= 3",
        "SELECT region, CAST(sum(units) AS BIGINT) AS units FROM q1_units_1 GROUP BY region ORDER BY units DESC",
    ),
    _t(
        "east_products",
        "In the east, which product earned most? Chart the east's revenue by product.",
        "regional sales",
        "sales",
        ("product", "revenue"),
        "SELECT * FROM sales WHERE region = 'east'",
        "SELECT product, CAST(sum(revenue) AS BIGINT) AS revenue FROM east_products_1 GROUP BY product "
        "ORDER BY revenue DESC",
    ),
    _t(
        "monthly_units",
        "Which month sold the most units overall? Chart units by month.",
        "monthly sales",
        "sales",
        ("month", "units"),
        "SELECT month, CAST(sum(units) AS BIGINT) AS units FROM sales GROUP BY month ORDER BY units DESC",
    ),
    _t(
        "warmest_city",
        "Which city is warmest on average? Chart average temperature by city.",
        "temperature by city",
        "weather",
        ("city", "avg_temp"),
        "SELECT city, round(avg(temp_c), 2) AS avg_temp FROM weather GROUP BY city ORDER BY avg_temp DESC",
    ),
    _t(
        "wettest_city",
        "Which city gets the most rain? Chart total rain by city.",
        "rainfall",
        "weather",
        ("city", "rain"),
        "SELECT city, CAST(sum(rain_mm) AS BIGINT) AS rain FROM weather GROUP BY city ORDER BY rain DESC",
    ),
    _t(
        "summer_heat",
        "Which city is warmest in summer (June to August)? Chart it.",
        "temperature readings",
        "weather",
        ("city", "avg_temp"),
        "SELECT * FROM weather WHERE month BETWEEN 6 AND 8",
        "SELECT city, round(avg(temp_c), 2) AS avg_temp FROM summer_heat_1 GROUP BY city ORDER BY avg_temp DESC",
    ),
    _t(
        "frost_days",
        "Which city has the most frost readings? Chart frost readings by city.",
        "temperature below zero",
        "weather",
        ("city", "frost"),
        "SELECT * FROM weather WHERE temp_c < 0",
        "SELECT city, CAST(count(*) AS BIGINT) AS frost FROM frost_days_1 GROUP BY city ORDER BY frost DESC, city",
    ),
    _t(
        "oslo_rain_month",
        "In which month does Oslo get the most rain? Chart Oslo's rain by month.",
        "rain per month",
        "weather",
        ("month", "rain"),
        "SELECT * FROM weather WHERE city = 'oslo'",
        "SELECT month, CAST(sum(rain_mm) AS BIGINT) AS rain FROM oslo_rain_month_1 GROUP BY month "
        "ORDER BY rain DESC, month",
    ),
    _t(
        "dry_readings",
        "Which city has the most dry readings (under 5 mm)? Chart them.",
        "rain readings",
        "weather",
        ("city", "dry"),
        "SELECT city, CAST(count(*) AS BIGINT) AS dry FROM weather WHERE rain_mm < 5 GROUP BY city "
        "ORDER BY dry DESC, city",
    ),
    _t(
        "open_hours",
        "Which team has the most open hours? Chart open hours by team.",
        "support tickets",
        "tickets",
        ("team", "hours"),
        "SELECT * FROM tickets WHERE status = 'open'",
        "SELECT team, CAST(sum(hours) AS BIGINT) AS hours FROM open_hours_1 GROUP BY team ORDER BY hours DESC",
    ),
    _t(
        "urgent_tickets",
        "Which team has the most urgent tickets? Chart urgent tickets by team.",
        "ticket priorities",
        "tickets",
        ("team", "n"),
        "SELECT * FROM tickets WHERE priority = 'urgent'",
        "SELECT team, CAST(count(*) AS BIGINT) AS n FROM urgent_tickets_1 GROUP BY team ORDER BY n DESC, team",
    ),
    _t(
        "slowest_team",
        "Which team's tickets take longest on average? Chart it.",
        "ticket hours",
        "tickets",
        ("team", "avg_hours"),
        "SELECT team, round(avg(hours), 2) AS avg_hours FROM tickets GROUP BY team ORDER BY avg_hours DESC",
    ),
    _t(
        "waiting_priority",
        "Among waiting tickets, which priority holds the most hours? Chart it.",
        "waiting tickets",
        "tickets",
        ("priority", "hours"),
        "SELECT * FROM tickets WHERE status = 'waiting'",
        "SELECT priority, CAST(sum(hours) AS BIGINT) AS hours FROM waiting_priority_1 GROUP BY priority "
        "ORDER BY hours DESC",
    ),
    _t(
        "closed_share",
        "Which team closed the most tickets? Chart closed tickets by team.",
        "ticket status",
        "tickets",
        ("team", "closed"),
        "SELECT team, CAST(count(*) AS BIGINT) AS closed FROM tickets WHERE status = 'closed' GROUP BY team "
        "ORDER BY closed DESC, team",
    ),
    _t(
        "mobile_priorities",
        "For the mobile team, which priority costs the most hours? Chart it.",
        "tickets by team",
        "tickets",
        ("priority", "hours"),
        "SELECT * FROM tickets WHERE team = 'mobile'",
        "SELECT priority, CAST(sum(hours) AS BIGINT) AS hours FROM mobile_priorities_1 GROUP BY priority "
        "ORDER BY hours DESC",
    ),
)
