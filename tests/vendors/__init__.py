"""Tests of the vendor clients (hermes.vendors) on their own."""
