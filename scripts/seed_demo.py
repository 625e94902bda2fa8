"""Build the demo data sets the default adapters query: HR in SQLite, sales in DuckDB.

Why a generator instead of committed binaries: the databases are build outputs, so they are
rebuilt from a fixed random seed and come out identical on every machine. A build is skipped
when the file already carries the stamp of this script's source (use --force to rebuild), and
each file is written next to its target and moved into place, so a running server never sees
a half-built database.

Usage (from the repo root): python scripts/seed_demo.py [--force] [--root DIR]
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import hashlib
import itertools
import json
import os
import random
import sqlite3
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

SEED = 20250601
HR_DB = Path("templates/hr/hr.db")
SALES_DB = Path("templates/sales/sales.duckdb")
# The demo world's "today": the last order and hire date. Leave booked after it is upcoming, and
# orders from its last two weeks are mostly still pending.
AS_OF = date(2025, 12, 31)

Row = tuple[object, ...]


@dataclass(frozen=True)
class Table:
    name: str
    ddl: str
    columns: tuple[str, ...]
    rows: list[Row]


# --------------------------------------------------------------------------- shared helpers


def _stamp() -> str:
    """Changes whenever this file changes, so an edited generator rebuilds stale outputs."""
    digest = hashlib.sha256(Path(__file__).read_bytes())
    digest.update(str(SEED).encode())
    return digest.hexdigest()[:16]


def _random_date(rng: random.Random, start: date, end: date) -> date:
    return start + timedelta(days=rng.randint(0, (end - start).days))


def _weighted_year(rng: random.Random, weights: dict[int, float]) -> int:
    return rng.choices(list(weights), weights=list(weights.values()))[0]


FEMALE = [
    "Olivia",
    "Emma",
    "Sophia",
    "Ava",
    "Isabella",
    "Mia",
    "Amelia",
    "Harper",
    "Evelyn",
    "Abigail",
    "Emily",
    "Ella",
    "Grace",
    "Chloe",
    "Victoria",
    "Aisha",
    "Fatima",
    "Mei",
    "Yuki",
    "Ananya",
    "Priya",
    "Sofia",
    "Lucia",
    "Camila",
    "Nadia",
    "Ingrid",
    "Leah",
    "Hannah",
    "Rachel",
    "Zoe",
    "Naomi",
    "Keiko",
]
MALE = [
    "Liam",
    "Noah",
    "Oliver",
    "Elijah",
    "James",
    "William",
    "Benjamin",
    "Lucas",
    "Henry",
    "Alexander",
    "Daniel",
    "Matthew",
    "Samuel",
    "David",
    "Joseph",
    "Carlos",
    "Mateo",
    "Diego",
    "Ahmed",
    "Omar",
    "Rahul",
    "Arjun",
    "Wei",
    "Hiroshi",
    "Kwame",
    "Tomasz",
    "Luca",
    "Ethan",
    "Nathan",
    "Isaac",
    "Marcus",
]
NEUTRAL = ["Alex", "Jordan", "Taylor", "Casey", "Morgan", "Riley", "Jamie", "Avery", "Quinn", "Sam"]
LAST = [
    "Smith",
    "Johnson",
    "Williams",
    "Brown",
    "Jones",
    "Garcia",
    "Miller",
    "Davis",
    "Rodriguez",
    "Martinez",
    "Hernandez",
    "Lopez",
    "Gonzalez",
    "Wilson",
    "Anderson",
    "Thomas",
    "Moore",
    "Jackson",
    "Martin",
    "Lee",
    "Thompson",
    "White",
    "Harris",
    "Clark",
    "Lewis",
    "Robinson",
    "Walker",
    "Young",
    "Allen",
    "King",
    "Wright",
    "Scott",
    "Nguyen",
    "Hill",
    "Flores",
    "Green",
    "Adams",
    "Nelson",
    "Baker",
    "Hall",
    "Rivera",
    "Campbell",
    "Mitchell",
    "Carter",
    "Patel",
    "Shah",
    "Kim",
    "Chen",
    "Wang",
    "Singh",
    "Kowalski",
    "Novak",
    "Rossi",
    "Bianchi",
    "Muller",
    "Schmidt",
    "Tanaka",
    "Sato",
    "Okafor",
    "Mensah",
    "O'Brien",
    "Murphy",
    "Kelly",
    "Sullivan",
    "Cohen",
    "Larsen",
    "Andersson",
    "Dubois",
    "Silva",
    "Costa",
]


def _person(rng: random.Random) -> tuple[str, str, str]:
    """First name, last name and gender; neutral names carry all three genders."""
    roll = rng.random()
    if roll < 0.47:
        return rng.choice(FEMALE), rng.choice(LAST), "Female"
    if roll < 0.94:
        return rng.choice(MALE), rng.choice(LAST), "Male"
    gender = rng.choices(["Female", "Male", "Non-binary"], weights=[3, 3, 4])[0]
    return rng.choice(NEUTRAL), rng.choice(LAST), gender


# --------------------------------------------------------------------------- HR data


@dataclass(frozen=True)
class Department:
    office: str
    budget: int
    head: tuple[str, str, str, str]  # first, last, gender, title
    manager_title: str
    bands: tuple[tuple[str, int, int, int], ...]  # title, salary min, salary max, hiring weight
    headcount: int


DEPARTMENTS: dict[str, Department] = {
    "Engineering": Department(
        "San Francisco",
        14_500_000,
        ("Priya", "Raman", "Female", "VP of Engineering"),
        "Engineering Manager",
        (
            ("Software Engineer", 98_000, 138_000, 40),
            ("Senior Software Engineer", 138_000, 178_000, 25),
            ("Staff Engineer", 172_000, 215_000, 6),
            ("QA Engineer", 78_000, 108_000, 8),
            ("DevOps Engineer", 112_000, 152_000, 8),
            ("Data Engineer", 115_000, 155_000, 7),
        ),
        94,
    ),
    "Sales": Department(
        "New York",
        6_800_000,
        ("Marcus", "Webb", "Male", "VP of Sales"),
        "Sales Manager",
        (
            ("Sales Development Representative", 55_000, 70_000, 12),
            ("Account Executive", 75_000, 110_000, 18),
            ("Senior Account Executive", 105_000, 140_000, 8),
            ("Sales Engineer", 110_000, 145_000, 5),
        ),
        55,
    ),
    "HR": Department(
        "Chicago",
        2_300_000,
        ("Denise", "Okafor", "Female", "Head of People"),
        "HR Manager",
        (
            ("HR Coordinator", 50_000, 65_000, 5),
            ("Recruiter", 65_000, 90_000, 7),
            ("HR Business Partner", 90_000, 120_000, 4),
            ("Payroll Specialist", 60_000, 80_000, 2),
        ),
        20,
    ),
    "Marketing": Department(
        "New York",
        4_100_000,
        ("Elena", "Petrova", "Female", "VP of Marketing"),
        "Marketing Manager",
        (
            ("Marketing Coordinator", 52_000, 68_000, 6),
            ("Content Strategist", 70_000, 95_000, 6),
            ("Product Marketing Manager", 110_000, 145_000, 5),
            ("Growth Analyst", 80_000, 110_000, 5),
            ("Graphic Designer", 65_000, 90_000, 4),
        ),
        30,
    ),
    "Finance": Department(
        "Chicago",
        3_400_000,
        ("Robert", "Kline", "Male", "Chief Financial Officer"),
        "Finance Manager",
        (
            ("Accountant", 65_000, 90_000, 7),
            ("Financial Analyst", 75_000, 105_000, 7),
            ("Senior Financial Analyst", 100_000, 130_000, 4),
            ("Controller", 130_000, 160_000, 1),
        ),
        25,
    ),
    "Operations": Department(
        "Austin",
        3_200_000,
        ("Samuel", "Ortiz", "Male", "Chief Operating Officer"),
        "Operations Manager",
        (
            ("Operations Analyst", 60_000, 85_000, 8),
            ("Office Manager", 55_000, 75_000, 4),
            ("Logistics Coordinator", 50_000, 68_000, 6),
            ("IT Support Technician", 55_000, 75_000, 5),
        ),
        30,
    ),
    "Support": Department(
        "Austin",
        3_300_000,
        ("Hannah", "Brooks", "Female", "Director of Customer Support"),
        "Support Manager",
        (
            ("Support Specialist", 45_000, 60_000, 20),
            ("Senior Support Specialist", 58_000, 75_000, 10),
            ("Technical Support Engineer", 70_000, 95_000, 8),
        ),
        45,
    ),
}
CEO = ("Catherine", "Holloway", "Female", "Chief Executive Officer", "Operations")
EMPLOYEE_CITIES = ["San Francisco", "New York", "Chicago", "Austin", "Seattle", "Boston", "Denver", "Toronto", "London"]
HIRE_YEAR_WEIGHTS = {
    2015: 3,
    2016: 4,
    2017: 5,
    2018: 6,
    2019: 7,
    2020: 6,
    2021: 9,
    2022: 11,
    2023: 10,
    2024: 11,
    2025: 10,
}
LEAVE_STATUSES = ("approved", "pending", "rejected")


@dataclass
class _Employee:
    id: int
    first: str
    last: str
    gender: str
    department: str
    title: str
    salary: int
    hired: date
    manager_id: int | None
    city: str
    active: bool
    left_year: int | None  # year of leaving, for terminated staff (not stored; bounds reviews and leave)
    talent: float = 3.4

    def row(self, email: str) -> Row:
        return (
            self.id,
            self.first,
            self.last,
            email,
            self.department,
            self.title,
            self.salary,
            self.hired.isoformat(),
            self.manager_id,
            self.city,
            "active" if self.active else "terminated",
            self.gender,
        )


class _HrBuilder:
    """Grows the org chart top-down so that every manager exists before their reports."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.people: list[_Employee] = []
        self.names: set[tuple[str, str]] = set()

    def _unique_person(self) -> tuple[str, str, str]:
        while True:
            first, last, gender = _person(self.rng)
            if (first, last) not in self.names:
                self.names.add((first, last))
                return first, last, gender

    def _salary(self, low: int, high: int, hired: date) -> int:
        tenure_bonus = (AS_OF.year - hired.year) * 0.012
        value = self.rng.uniform(low, high) * (1 + min(tenure_bonus, 0.08))
        return int(round(value / 500.0) * 500)

    def add(
        self,
        first: str,
        last: str,
        gender: str,
        dept: str,
        title: str,
        band: tuple[int, int],
        hired: date,
        manager_id: int | None,
        city: str,
        active: bool = True,
    ) -> _Employee:
        left_year = None if active else self.rng.randint(max(hired.year, 2016), 2025)
        person = _Employee(
            len(self.people) + 1,
            first,
            last,
            gender,
            dept,
            title,
            self._salary(*band, hired),
            hired,
            manager_id,
            city,
            active,
            left_year,
            talent=min(4.6, max(2.0, self.rng.gauss(3.4, 0.55))),
        )
        self.names.add((first, last))
        self.people.append(person)
        return person

    def _city(self, office: str) -> str:
        return office if self.rng.random() < 0.65 else self.rng.choice(EMPLOYEE_CITIES)

    def build(self) -> list[_Employee]:
        rng = self.rng
        first, last, gender, title, dept = CEO
        ceo = self.add(first, last, gender, dept, title, (330_000, 345_000), date(2015, 1, 5), None, "Austin")
        for dept, spec in DEPARTMENTS.items():
            office, bands, headcount = spec.office, spec.bands, spec.headcount
            top = max(b[2] for b in bands)  # best-paid individual contributor sets the management bands
            h_first, h_last, h_gender, h_title = spec.head
            head_hired = _random_date(rng, date(2015, 2, 1), date(2018, 6, 30))
            head_low = max(int(top * 1.3), 175_000)  # executives are not paid like their team
            boss = self.add(
                h_first, h_last, h_gender, dept, h_title, (head_low, int(head_low * 1.12)), head_hired, ceo.id, office
            )
            n_managers = max(1, round((headcount - 1) / 9))
            managers = []
            for _ in range(n_managers):
                m_first, m_last, m_gender = self._unique_person()
                hired = _random_date(rng, date(2015, 3, 1), date(2021, 12, 31))
                band = (int(top * 0.95), int(top * 1.12))
                managers.append(
                    self.add(
                        m_first, m_last, m_gender, dept, spec.manager_title, band, hired, boss.id, self._city(office)
                    )
                )
            for _ in range(headcount - 1 - n_managers):
                p_first, p_last, p_gender = self._unique_person()
                title_, low, high, _w = rng.choices(bands, weights=[b[3] for b in bands])[0]
                year = _weighted_year(rng, HIRE_YEAR_WEIGHTS)
                hired = _random_date(rng, date(year, 1, 1), min(date(year, 12, 31), AS_OF))
                active = rng.random() > (0.05 + 0.02 * (2025 - year))  # older hires left more often
                self.add(
                    p_first,
                    p_last,
                    p_gender,
                    dept,
                    title_,
                    (low, high),
                    hired,
                    rng.choice(managers).id,
                    self._city(office),
                    active,
                )
        return self.people


def _email(person: _Employee, used: set[str]) -> str:
    base = f"{person.first}.{person.last}".lower().replace("'", "").replace(" ", "")
    email, n = f"{base}@acme-corp.example", 2
    while email in used:
        email, n = f"{base}{n}@acme-corp.example", n + 1
    used.add(email)
    return email


def _reviews(rng: random.Random, people: list[_Employee]) -> list[Row]:
    rows: list[Row] = []
    for person in people:
        if person.manager_id is None:
            continue
        last_year = person.left_year - 1 if person.left_year else 2025
        for year in range(person.hired.year, last_year + 1):
            if person.hired > date(year, 9, 30):
                continue  # too new for that year's December cycle
            rating = int(min(5, max(1, round(rng.gauss(person.talent, 0.7)))))
            day = date(year, 12, rng.randint(1, 12))
            rows.append((len(rows) + 1, person.id, day.isoformat(), rating, person.manager_id))
    return rows


def _leave(rng: random.Random, people: list[_Employee]) -> list[Row]:
    rows: list[Row] = []

    def add(person: _Employee, start: date, days: int, kind: str) -> None:
        end = start + timedelta(days=days - 1)
        if start > AS_OF:
            status = rng.choices(LEAVE_STATUSES[:2], weights=[40, 60])[0]
        else:
            status = rng.choices(LEAVE_STATUSES, weights=[90, 0, 10])[0]
        rows.append((len(rows) + 1, person.id, start.isoformat(), end.isoformat(), kind, status))

    for person in people:
        last_year = person.left_year - 1 if person.left_year else 2025
        for year in range(max(2023, person.hired.year), last_year + 1):
            start_floor = max(date(year, 1, 2), person.hired + timedelta(days=30))
            year_end = date(year, 12, 20) if year < 2025 else date(2026, 2, 15)
            if start_floor >= year_end:
                continue
            for _ in range(rng.choices([0, 1, 2, 3], weights=[10, 35, 40, 15])[0]):
                add(
                    person, _random_date(rng, start_floor, year_end), rng.choice([1, 2, 3, 5, 5, 7, 10, 14]), "vacation"
                )
            for _ in range(rng.choices([0, 1, 2], weights=[45, 40, 15])[0]):
                add(person, _random_date(rng, start_floor, year_end), rng.randint(1, 4), "sick")
            if rng.random() < 0.03:
                add(person, _random_date(rng, start_floor, year_end), rng.randint(40, 120), "parental")
    rows.sort(key=lambda r: (str(r[2]), int(r[1])))  # ids follow submission order, as in a real system
    return [(i, *row[1:]) for i, row in enumerate(rows, start=1)]


def hr_tables(seed: int = SEED) -> list[Table]:
    """All HR rows, generated from one seeded stream."""
    rng = random.Random(seed)
    people = _HrBuilder(rng).build()
    used: set[str] = set()
    employees = [p.row(_email(p, used)) for p in people]
    departments = [(i, name, spec.office, spec.budget) for i, (name, spec) in enumerate(DEPARTMENTS.items(), start=1)]
    return [
        Table(
            "departments",
            "CREATE TABLE departments (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, "
            "location TEXT NOT NULL, budget INTEGER NOT NULL)",
            ("id", "name", "location", "budget"),
            departments,
        ),
        Table(
            "employees",
            "CREATE TABLE employees (id INTEGER PRIMARY KEY, first_name TEXT NOT NULL, "
            "last_name TEXT NOT NULL, email TEXT NOT NULL UNIQUE, "
            "department TEXT NOT NULL REFERENCES departments(name), "
            "title TEXT NOT NULL, salary INTEGER NOT NULL, hire_date TEXT NOT NULL, "
            "manager_id INTEGER REFERENCES employees(id), city TEXT NOT NULL, "
            "status TEXT NOT NULL CHECK (status IN ('active', 'terminated')), gender TEXT NOT NULL)",
            (
                "id",
                "first_name",
                "last_name",
                "email",
                "department",
                "title",
                "salary",
                "hire_date",
                "manager_id",
                "city",
                "status",
                "gender",
            ),
            employees,
        ),
        Table(
            "performance_reviews",
            "CREATE TABLE performance_reviews (id INTEGER PRIMARY KEY, "
            "employee_id INTEGER NOT NULL REFERENCES employees(id), review_date TEXT NOT NULL, "
            "rating INTEGER NOT NULL CHECK (rating BETWEEN 1 AND 5), "
            "reviewer_id INTEGER REFERENCES employees(id))",
            ("id", "employee_id", "review_date", "rating", "reviewer_id"),
            _reviews(rng, people),
        ),
        Table(
            "leave_requests",
            "CREATE TABLE leave_requests (id INTEGER PRIMARY KEY, "
            "employee_id INTEGER NOT NULL REFERENCES employees(id), start_date TEXT NOT NULL, "
            "end_date TEXT NOT NULL, kind TEXT NOT NULL CHECK (kind IN ('vacation', 'sick', 'parental')), "
            "status TEXT NOT NULL CHECK (status IN ('approved', 'pending', 'rejected')))",
            ("id", "employee_id", "start_date", "end_date", "kind", "status"),
            _leave(rng, people),
        ),
    ]


HR_INDEXES = (
    "CREATE INDEX idx_employees_department ON employees(department)",
    "CREATE INDEX idx_employees_manager ON employees(manager_id)",
    "CREATE INDEX idx_reviews_employee ON performance_reviews(employee_id)",
    "CREATE INDEX idx_leave_employee ON leave_requests(employee_id)",
)


# --------------------------------------------------------------------------- sales data

REGION_COUNTRIES = {
    "North": ["Canada", "Sweden", "Norway", "Finland", "Denmark"],
    "South": ["Brazil", "Mexico", "Spain", "Italy", "Argentina"],
    "East": ["Japan", "India", "Singapore", "Australia", "South Korea"],
    "West": ["United States", "United Kingdom", "Germany", "France", "Ireland"],
}
REGION_WEIGHTS = {"North": 20, "South": 22, "East": 25, "West": 33}
SEGMENT_WEIGHTS = {"Enterprise": 15, "SMB": 40, "Consumer": 45}
KEY_ACCOUNTS = [  # fixed names so that demo questions can refer to real customers
    ("Orion Data Systems", "Enterprise", "West", "United States", date(2021, 2, 8)),
    ("Blue Harbor Logistics", "Enterprise", "North", "Canada", date(2021, 3, 15)),
    ("Summit Ridge Healthcare", "Enterprise", "West", "United Kingdom", date(2021, 5, 3)),
    ("Sakura Robotics", "Enterprise", "East", "Japan", date(2021, 6, 21)),
    ("Greenfield Grocers", "SMB", "South", "Spain", date(2021, 9, 9)),
]
COMPANY_WORDS = [
    "Apex",
    "Bright",
    "Cedar",
    "Delta",
    "Evergreen",
    "Falcon",
    "Granite",
    "Horizon",
    "Ironwood",
    "Juniper",
    "Keystone",
    "Lighthouse",
    "Maple",
    "Northstar",
    "Oakridge",
    "Pinnacle",
    "Quantum",
    "Redwood",
    "Silverline",
    "Trident",
    "Unity",
    "Vertex",
    "Willow",
    "Zenith",
    "Copper",
    "Harbor",
    "Riverbend",
    "Stonegate",
    "Bluebird",
    "Crescent",
]
COMPANY_TRADES = [
    "Analytics",
    "Dental",
    "Logistics",
    "Manufacturing",
    "Consulting",
    "Media",
    "Foods",
    "Architects",
    "Energy",
    "Biotech",
    "Retail",
    "Insurance",
    "Engineering",
    "Design",
    "Labs",
    "Software",
    "Travel",
    "Legal",
    "Healthcare",
    "Outfitters",
]
SUFFIX = {
    "Enterprise": ["Corporation", "Group", "Holdings", "International", "Inc."],
    "SMB": ["LLC", "& Co.", "Partners", "Studio", "Ltd."],
}
PRODUCTS: dict[str, list[tuple[str, float, int]]] = {  # category -> (name, list price, popularity)
    "Laptops": [
        ("Aero 13 Ultrabook", 1199.0, 8),
        ("Aero 15 Pro", 1899.0, 5),
        ("Titan 17 Workstation", 2799.0, 2),
        ("Scout 14 Laptop", 749.0, 9),
        ("Scout 15 Laptop", 849.0, 7),
        ("Flex 2-in-1 Convertible", 999.0, 4),
        ("Chromebook Go 11", 329.0, 5),
    ],
    "Monitors": [
        ("ViewPro 24 FHD Monitor", 189.0, 9),
        ("ViewPro 27 QHD Monitor", 329.0, 8),
        ("ViewPro 32 4K Monitor", 549.0, 4),
        ("UltraWide 34 Curved Monitor", 699.0, 3),
        ("Portable 15 USB-C Monitor", 229.0, 3),
        ("ColorMaster 27 Designer Monitor", 899.0, 2),
    ],
    "Accessories": [
        ("Wireless Mouse M2", 29.0, 14),
        ("Ergo Vertical Mouse", 59.0, 7),
        ("Mechanical Keyboard K8", 119.0, 8),
        ("Slim Wireless Keyboard", 69.0, 9),
        ("USB-C Docking Station", 229.0, 7),
        ("Noise-Cancelling Headset", 179.0, 8),
        ("HD Webcam 1080p", 89.0, 8),
        ("Laptop Backpack", 79.0, 6),
        ("65W USB-C Charger", 49.0, 9),
    ],
    "Software": [
        ("Office Suite Annual License", 99.0, 10),
        ("Antivirus Pro 1-Year", 49.0, 7),
        ("Cloud Backup 1TB Annual", 119.0, 5),
        ("Design Studio License", 599.0, 2),
        ("Project Tracker Team Plan", 299.0, 3),
        ("Password Vault Business", 39.0, 4),
    ],
    "Networking": [
        ("Wi-Fi 6 Router AX3000", 179.0, 6),
        ("Mesh Wi-Fi System 3-Pack", 349.0, 4),
        ("24-Port Gigabit Switch", 259.0, 3),
        ("8-Port PoE Switch", 149.0, 3),
        ("Business Firewall Appliance", 899.0, 2),
        ("Cat6 Cable 10-Pack", 39.0, 6),
    ],
    "Furniture": [
        ("Ergonomic Office Chair", 449.0, 6),
        ("Standing Desk 60in", 799.0, 4),
        ("Standing Desk Frame", 599.0, 2),
        ("Dual Monitor Arm", 139.0, 5),
        ("Under-Desk Drawer", 119.0, 2),
        ("Adjustable Footrest", 49.0, 3),
    ],
}
ORDER_YEAR_WEIGHTS = {2023: 28, 2024: 33, 2025: 39}
MONTH_WEIGHTS = [7, 7, 8, 8, 8, 8, 7, 8, 9, 9, 11, 12]  # Q4 peak
# online / retail / partner
CHANNEL_WEIGHTS = {"Enterprise": [30, 15, 55], "SMB": [55, 20, 25], "Consumer": [62, 36, 2]}
QUANTITY = {"Enterprise": (5, 60), "SMB": (1, 12), "Consumer": (1, 2)}
DISCOUNT = {"Enterprise": (0.10, 0.20), "SMB": (0.0, 0.10), "Consumer": (0.0, 0.05)}
SEGMENT_ACTIVITY = {"Enterprise": 3.0, "SMB": 1.5, "Consumer": 0.4}
N_CUSTOMERS = 500
N_ORDERS = 5000


def _company_names(rng: random.Random) -> list[str]:
    """Every word/trade pair once, shuffled: unique names without retry loops."""
    pairs = [f"{w} {t}" for w, t in itertools.product(COMPANY_WORDS, COMPANY_TRADES)]
    rng.shuffle(pairs)
    return pairs


def _customers(rng: random.Random) -> list[Row]:
    rows: list[Row] = [(i, *acct[:4], acct[4]) for i, acct in enumerate(KEY_ACCOUNTS, start=1)]
    companies = iter(_company_names(rng))
    taken = {name for name, *_ in KEY_ACCOUNTS}
    while len(rows) < N_CUSTOMERS:
        segment = rng.choices(list(SEGMENT_WEIGHTS), weights=list(SEGMENT_WEIGHTS.values()))[0]
        if segment == "Consumer":
            first, last, _gender = _person(rng)
            name = f"{first} {last}"
        else:
            name = f"{next(companies)} {rng.choice(SUFFIX[segment])}"
        if name in taken:
            continue
        taken.add(name)
        region = rng.choices(list(REGION_WEIGHTS), weights=list(REGION_WEIGHTS.values()))[0]
        country = rng.choice(REGION_COUNTRIES[region])
        year = rng.choices([2021, 2022, 2023, 2024, 2025], weights=[16, 20, 24, 22, 18])[0]
        last_day = date(year, 12, 31) if year < 2025 else date(2025, 10, 31)
        signup = _random_date(rng, date(year, 1, 1), last_day)
        rows.append((len(rows) + 1, name, segment, region, country, signup))
    return rows


def _products() -> list[Row]:
    ids = itertools.count(1)
    return [(next(ids), name, category, price) for category, items in PRODUCTS.items() for name, price, _pop in items]


def _orders(rng: random.Random, customers: list[Row], products: list[Row]) -> tuple[list[Row], list[Row]]:
    by_signup = sorted(customers, key=lambda c: (c[5], c[0]))
    signups = [c[5] for c in by_signup]
    # a few customers buy a lot (Pareto-like weights, businesses more than households);
    # the key accounts are among the busiest
    weights = [
        25.0 if c[0] <= len(KEY_ACCOUNTS) else min(12.0, rng.paretovariate(1.6)) * SEGMENT_ACTIVITY[str(c[2])]
        for c in by_signup
    ]
    cumulative = list(itertools.accumulate(weights))
    popularity = [pop for items in PRODUCTS.values() for _n, _p, pop in items]

    dates = []
    for _ in range(N_ORDERS):
        year = _weighted_year(rng, ORDER_YEAR_WEIGHTS)
        month = rng.choices(range(1, 13), weights=MONTH_WEIGHTS)[0]
        month_end = date(year + (month == 12), month % 12 + 1, 1) - timedelta(days=1)
        dates.append(_random_date(rng, date(year, month, 1), min(month_end, AS_OF)))
    dates.sort()

    orders: list[Row] = []
    items: list[Row] = []
    for order_id, when in enumerate(dates, start=1):
        eligible = bisect.bisect_right(signups, when)
        pick = bisect.bisect_left(cumulative, rng.random() * cumulative[max(eligible, 1) - 1])
        customer = by_signup[min(pick, max(eligible, 1) - 1)]
        segment = customer[2]
        if when > AS_OF - timedelta(days=14) and rng.random() < 0.75:
            status = "pending"
        else:
            status = rng.choices(["completed", "returned", "pending"], weights=[92, 6, 2])[0]
        channel = rng.choices(["online", "retail", "partner"], weights=CHANNEL_WEIGHTS[segment])[0]
        orders.append((order_id, customer[0], when, status, channel))
        n_lines = rng.choices([1, 2, 3, 4], weights=[50, 30, 15, 5])[0]
        chosen: set[int] = set()
        while len(chosen) < n_lines:
            chosen.add(rng.choices(range(len(products)), weights=popularity)[0])
        low_q, high_q = QUANTITY[segment]
        low_d, high_d = DISCOUNT[segment]
        for index in sorted(chosen):
            product = products[index]
            list_price = float(product[3])  # type: ignore[arg-type]
            # nobody buys workstations by the crate
            top_q = high_q if list_price < 1500 else max(1, high_q // 4)
            quantity = rng.randint(min(low_q, top_q), top_q)
            price = round(list_price * (1 - rng.uniform(low_d, high_d)), 2)
            items.append((order_id, product[0], quantity, price))
    return orders, items


def sales_tables(seed: int = SEED) -> list[Table]:
    rng = random.Random(seed + 1)
    customers = _customers(rng)
    products = _products()
    orders, items = _orders(rng, customers, products)
    return [
        Table(
            "customers",
            "CREATE TABLE customers (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL UNIQUE, "
            "segment VARCHAR NOT NULL CHECK (segment IN ('Enterprise', 'SMB', 'Consumer')), "
            "region VARCHAR NOT NULL CHECK (region IN ('North', 'South', 'East', 'West')), "
            "country VARCHAR NOT NULL, signup_date DATE NOT NULL)",
            ("id", "name", "segment", "region", "country", "signup_date"),
            customers,
        ),
        Table(
            "products",
            "CREATE TABLE products (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL UNIQUE, "
            "category VARCHAR NOT NULL, unit_price DECIMAL(10, 2) NOT NULL)",
            ("id", "name", "category", "unit_price"),
            products,
        ),
        Table(
            "orders",
            "CREATE TABLE orders (id INTEGER PRIMARY KEY, "
            "customer_id INTEGER NOT NULL REFERENCES customers(id), order_date DATE NOT NULL, "
            "status VARCHAR NOT NULL CHECK (status IN ('completed', 'returned', 'pending')), "
            "channel VARCHAR NOT NULL CHECK (channel IN ('online', 'retail', 'partner')))",
            ("id", "customer_id", "order_date", "status", "channel"),
            orders,
        ),
        Table(
            "order_items",
            "CREATE TABLE order_items (order_id INTEGER NOT NULL REFERENCES orders(id), "
            "product_id INTEGER NOT NULL REFERENCES products(id), "
            "quantity INTEGER NOT NULL CHECK (quantity > 0), unit_price DECIMAL(10, 2) NOT NULL, "
            "PRIMARY KEY (order_id, product_id))",
            ("order_id", "product_id", "quantity", "unit_price"),
            items,
        ),
    ]


# --------------------------------------------------------------------------- writers


def _staging(target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    staging.unlink(missing_ok=True)
    return staging


def write_sqlite(target: Path, tables: Sequence[Table], stamp: str) -> None:
    staging = _staging(target)
    try:
        with contextlib.closing(sqlite3.connect(staging)) as con:
            for table in tables:
                con.execute(table.ddl)
                marks = ", ".join("?" for _ in table.columns)
                con.executemany(f"INSERT INTO {table.name} VALUES ({marks})", table.rows)
            for ddl in HR_INDEXES:
                con.execute(ddl)
            con.execute(f"PRAGMA user_version = {int(stamp[:7], 16)}")
            con.commit()
        os.replace(staging, target)
    finally:
        staging.unlink(missing_ok=True)


def sqlite_stamp_matches(target: Path, stamp: str) -> bool:
    if not target.exists():
        return False
    try:
        with contextlib.closing(sqlite3.connect(f"file:{target}?mode=ro", uri=True)) as con:
            return con.execute("PRAGMA user_version").fetchone()[0] == int(stamp[:7], 16)
    except sqlite3.Error:
        return False


def write_duckdb(target: Path, tables: Sequence[Table], stamp: str) -> None:
    import duckdb  # imported here so the HR half works without it
    import numpy as np

    staging = _staging(target)
    try:
        con = duckdb.connect(str(staging))
        try:
            for table in tables:
                con.execute(table.ddl)
                # column arrays in one INSERT ... SELECT: executemany is ~100x slower in DuckDB
                columns = {
                    name: np.array([_plain(row[i]) for row in table.rows], dtype=object)
                    for i, name in enumerate(table.columns)
                }
                con.register("staging_rows", columns)
                con.execute(f"INSERT INTO {table.name} SELECT * FROM staging_rows")
                con.unregister("staging_rows")
            con.execute(f"COMMENT ON TABLE orders IS 'seed:{stamp}'")
        finally:
            con.close()
        os.replace(staging, target)
    finally:
        staging.unlink(missing_ok=True)
        Path(f"{staging}.wal").unlink(missing_ok=True)


def _plain(value: object) -> object:
    return value.isoformat() if isinstance(value, date) else value


def duckdb_stamp_matches(target: Path, stamp: str) -> bool:
    if not target.exists():
        return False
    try:
        import duckdb

        con = duckdb.connect(str(target), read_only=True)
        try:
            found = con.execute("SELECT comment FROM duckdb_tables() WHERE table_name = 'orders'").fetchone()
        finally:
            con.close()
    except Exception:  # locked, corrupt or not a DuckDB file: rebuild
        return False
    return found is not None and found[0] == f"seed:{stamp}"


# --------------------------------------------------------------------------- entry point


@dataclass(frozen=True)
class SeedResult:
    path: Path
    built: bool
    row_counts: dict[str, int]


def seed(root: Path, force: bool = False) -> list[SeedResult]:
    """Build both demo databases under `root`; skip any that already carry this version's stamp."""
    stamp = _stamp()
    results = []
    for relative, make, matches, write in (
        (HR_DB, hr_tables, sqlite_stamp_matches, write_sqlite),
        (SALES_DB, sales_tables, duckdb_stamp_matches, write_duckdb),
    ):
        target = root / relative
        if not force and matches(target, stamp):
            results.append(SeedResult(target, False, {}))
            continue
        tables = make()
        write(target, tables, stamp)
        results.append(SeedResult(target, True, {t.name: len(t.rows) for t in tables}))
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="rebuild even if the outputs are up to date")
    parser.add_argument(
        "--root",
        type=Path,
        default=Path(__file__).resolve().parent.parent,
        help="directory that holds templates/ (default: the repo root)",
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    for result in seed(args.root, force=args.force):
        print(json.dumps({"path": str(result.path), "built": result.built, "rows": result.row_counts}))
    print(json.dumps({"seconds": round(time.perf_counter() - started, 2)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
